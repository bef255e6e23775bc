"""Checks pymongo over several Lethe servers sharing one store, given all
of them in its seed list: it discovers each as a mongos in a sharded
topology, spreads operations over all of them (their serverStatus
opcounters), commits a transaction and retries writes. Prints OK.
Usage: python3 manyservers.py <uri of all servers>"""
import sys
import time

from pymongo import MongoClient

uri = sys.argv[1]
# A latency window of a second rather than 15 ms, so that a round trip
# slowed by a loaded test machine does not take a server out of the choice.
client = MongoClient(uri, serverSelectionTimeoutMS=5000, heartbeatFrequencyMS=500, localThresholdMS=1000)
hosts = uri.split("//", 1)[1].split("/", 1)[0].split(",")
direct = {h: MongoClient("mongodb://" + h + "/", directConnection=True, serverSelectionTimeoutMS=5000) for h in hosts}


def opcounters():
    return {h: c.admin.command("serverStatus")["opcounters"] for h, c in direct.items()}


try:
    client.admin.command("ping")
    deadline = time.time() + 10
    while True:
        if hasattr(MongoClient, "topology_description"):  # PyMongo 4
            td = client.topology_description
            kind = td.topology_type_name
            kinds = {f"{a[0]}:{a[1]}": s.server_type_name for a, s in td.server_descriptions().items()}
        else:  # PyMongo 3 (Debian 12's) has no public topology description
            kind = "Sharded" if client.is_mongos else "not sharded"
            kinds = {f"{a[0]}:{a[1]}": "Mongos" for a in client.nodes} if client.is_mongos else {}
        if kind == "Sharded" and all(kinds.get(h) == "Mongos" for h in hosts):
            break
        assert time.time() < deadline, f"topology {kind}, servers {kinds}"
        time.sleep(0.05)

    coll = client.topo.py
    before = opcounters()
    for i in range(60):
        coll.insert_one({"_id": i})
        assert coll.find_one({"_id": i}) == {"_id": i}, i
    after = opcounters()
    for h in hosts:
        inserts = after[h]["insert"] - before[h]["insert"]
        queries = after[h]["query"] - before[h]["query"]
        assert inserts > 0 and queries > 0, f"{h} served {inserts} inserts and {queries} queries of 60 each"

    with client.start_session() as s:
        s.with_transaction(lambda s: [coll.insert_one({"_id": k}, session=s) for k in ("t1", "t2")])
    assert coll.count_documents({"_id": {"$in": ["t1", "t2"]}}) == 2, "the transaction committed"
    assert client.options.retry_writes, "retryable writes are on"
    res = coll.update_one({"_id": 0}, {"$inc": {"n": 1}})
    assert res.modified_count == 1, res.raw_result
    print("OK")
finally:
    client.close()
    for c in direct.values():
        c.close()
