"""Access control through pymongo over TLS: SCRAM-SHA-1 and SCRAM-SHA-256,
a wrong password, a read-only user, and MONGODB-X509 with a client
certificate. Prints OK.
Usage: python3 auth.py <host:port> <CA file> <client cert+key file> <its subject> <cert+key file of no user>"""
import sys
from urllib.parse import quote

from pymongo import MongoClient
from pymongo.errors import OperationFailure

host, ca_file, cert_file, subject, stranger_file = sys.argv[1:6]
tls = "tls=true&tlsCAFile=" + quote(ca_file, safe="")


def connect(uri):
    return MongoClient(uri, serverSelectionTimeoutMS=5000)


def whoami(client):
    st = client.admin.command("connectionStatus")
    return ",".join(u["user"] + "@" + u["db"] for u in st["authInfo"]["authenticatedUsers"])


def refused(uri, code, what):
    client = connect(uri)
    try:
        client.admin.command("ping")
    except OperationFailure as e:
        assert e.code == code, "%s: %r" % (what, e.details)
        return
    finally:
        client.close()
    raise AssertionError(what + " succeeded")


for mech in ["SCRAM-SHA-1", "SCRAM-SHA-256"]:
    opts = "authSource=app&authMechanism=%s&%s" % (mech, tls)
    client = connect("mongodb://writer:pw@%s/?%s" % (host, opts))
    try:
        assert whoami(client) == "writer@app", whoami(client)
        coll = client.app.python
        coll.insert_one({"mech": mech})
        assert coll.find_one({"mech": mech})["mech"] == mech
    finally:
        client.close()
    refused("mongodb://writer:wrong@%s/?%s" % (host, opts), 18, "wrong password with " + mech)
    client = connect("mongodb://reader:pw@%s/?%s" % (host, opts))
    try:
        assert client.app.python.count_documents({"mech": mech}) == 1
        try:
            client.app.python.insert_one({"by": "reader"})
            raise AssertionError("insert by reader with " + mech + " succeeded")
        except OperationFailure as e:
            assert e.code == 13, e.details
    finally:
        client.close()

# MONGODB-X509: the certificate's subject is the user, in $external.
x509 = "authMechanism=MONGODB-X509&%s&tlsCertificateKeyFile=" % tls
client = connect("mongodb://%s/?%s%s" % (host, x509, quote(cert_file, safe="")))
try:
    assert whoami(client) == subject + "@$external", whoami(client)
    client.app.python.insert_one({"by": "x509"})
finally:
    client.close()
# A certificate the CA signed for a subject that is no user.
refused("mongodb://%s/?%s%s" % (host, x509, quote(stranger_file, safe="")), 18, "X.509 without a user")
print("OK")
