//! Broker names, interned: a topic's shape holds 4-byte ids instead of string handles, so building a shape is one
//! allocation and a `memcpy`, with no reference counts to touch, and the writer compares ranks, not strings.
//!
//! An id is never reused, so an id read from any view means the same name in every view. Names are few (one per
//! broker group ever registered); they stay for the life of the process, as Java's `brokerAddrTable` bins do.

use std::collections::HashMap;
use std::sync::Arc;

/// Index into `Names`.
pub(crate) type NameId = u32;

/// The read side: id → name. A view clones it in O(1); a new name copies the list once (names are few and new ones
/// rare), so looking one up — on every search of a topic's entry — is a plain index.
#[derive(Clone, Debug, Default)]
pub(crate) struct Names {
    by_id: Arc<Vec<Arc<str>>>,
    /// id → the name's place among all names in name order. Adding a name moves others' ranks but never their
    /// order, so entries sorted by name are sorted by the ranks of any later view too, and the writer's searches
    /// compare two integers instead of two strings.
    rank: Arc<Vec<u32>>,
}

impl Names {
    /// The name of an id taken from an entry of the same or an earlier view.
    pub(crate) fn name(&self, id: NameId) -> &Arc<str> {
        &self.by_id[id as usize]
    }

    /// The rank of an id taken from an entry of the same or an earlier view: `rank(a) < rank(b)` exactly when
    /// `name(a) < name(b)`.
    pub(crate) fn rank(&self, id: NameId) -> u32 {
        self.rank[id as usize]
    }
}

/// The writer side: the read side plus name → id.
#[derive(Clone, Debug, Default)]
pub(super) struct Interner {
    ids: HashMap<Arc<str>, NameId, ahash::RandomState>,
}

impl Interner {
    /// The id of `name`, adding it to `names` when new.
    pub(super) fn intern(&mut self, names: &mut Names, name: &Arc<str>) -> NameId {
        if let Some(&id) = self.ids.get(&**name) {
            return id;
        }
        let id = NameId::try_from(names.by_id.len()).expect("fewer than 2^32 broker names");
        Arc::make_mut(&mut names.by_id).push(name.clone());
        // Names are few and new ones rare: ranking them all again is simpler than shifting.
        let mut order: Vec<NameId> = (0..=id).collect();
        order.sort_unstable_by(|a, b| names.name(*a).cmp(names.name(*b)));
        let rank = Arc::make_mut(&mut names.rank);
        rank.resize(order.len(), 0);
        for (place, id) in order.into_iter().enumerate() {
            rank[id as usize] = place as u32;
        }
        self.ids.insert(name.clone(), id);
        id
    }

    /// The id of `name` if it was ever interned.
    pub(super) fn id(&self, name: &str) -> Option<NameId> {
        self.ids.get(name).copied()
    }
}
