//! Java properties text (`java.util.Properties` load rules and `MixAll.properties2String` output).

/// Parses properties text into (key, value) pairs in file order (later duplicates win when looked up).
pub fn parse(_text: &str) -> Result<Vec<(String, String)>, String> {
    unimplemented!()
}

/// `key=value\n` lines in the given order (callers sort), escaped so `parse` reads them back.
pub fn write(_pairs: &[(String, String)]) -> String {
    unimplemented!()
}
