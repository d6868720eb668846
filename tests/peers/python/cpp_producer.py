"""Sends messages with the native RocketMQ C++ client (librocketmq.so, bundled in the PyPI packages), using
routes from the name server given on the command line.

    python cpp_producer.py NAMESRV TOPIC COUNT PREFIX [START]

Bodies are PREFIX-START … PREFIX-(START+COUNT-1). Prints `SENT <status> <msg id> <offset>` per message, then
`OK` if every send returned SendStatus.OK. Works with both bindings the tests use (`rocketmq-python-cvs` 2.1.0.3
over the C++ client 2.1, `rocketmq` 0.4.4 over the C++ client 1.x): same module and API.
The client logs under $HOME/logs/rocketmq-cpp; the caller points HOME at a temp dir.
"""
import sys

from rocketmq.client import Message, Producer, SendStatus


def main():
    namesrv, topic, count, prefix = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    start = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    producer = Producer("interop_cpp_pg")
    # Only ever the address we are given: no name-server domain lookup over HTTP.
    producer.set_namesrv_addr(namesrv)
    producer.set_timeout(10000)
    producer.start()
    ok = 0
    try:
        for i in range(count):
            msg = Message(topic)
            msg.set_keys("key-%d" % (start + i))
            msg.set_tags("cpp")
            msg.set_body("%s-%d" % (prefix, start + i))
            result = producer.send_sync(msg)
            print("SENT %s %s %d" % (result.status.name, result.msg_id, result.offset), flush=True)
            if result.status == SendStatus.OK:
                ok += 1
    finally:
        producer.shutdown()
    if ok == count:
        print("OK", flush=True)
    else:
        print("FAILED %d of %d not OK" % (count - ok, count), flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
