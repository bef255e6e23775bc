// Access control through the MongoDB Node.js driver over TLS: SCRAM-SHA-1
// and SCRAM-SHA-256, a wrong password, a read-only user, and MONGODB-X509
// with a client certificate. Prints OK.
// Usage: node auth.mjs <host:port> <CA file> <client cert+key file> <its subject> <cert+key file of no user>
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';

const [host, caFile, certFile, subject, strangerFile] = process.argv.slice(2);
const tls = `tls=true&tlsCAFile=${encodeURIComponent(caFile)}`;

async function withClient(uri, fn) {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5000 });
  try {
    await client.connect();
    return await fn(client);
  } finally {
    await client.close();
  }
}

async function whoami(client) {
  const st = await client.db('admin').command({ connectionStatus: 1 });
  return st.authInfo.authenticatedUsers.map(u => `${u.user}@${u.db}`).join();
}

async function refused(uri, code, what) {
  await assert.rejects(withClient(uri, c => c.db('admin').command({ ping: 1 })),
    e => { assert.equal(e.code, code, `${what}: ${e}`); return true; }, what);
}

for (const mech of ['SCRAM-SHA-1', 'SCRAM-SHA-256']) {
  const opts = `authSource=app&authMechanism=${mech}&${tls}`;
  await withClient(`mongodb://writer:pw@${host}/?${opts}`, async c => {
    assert.equal(await whoami(c), 'writer@app', mech);
    const coll = c.db('app').collection('node');
    await coll.insertOne({ mech });
    assert.equal((await coll.findOne({ mech })).mech, mech);
  });
  await refused(`mongodb://writer:wrong@${host}/?${opts}`, 18, `wrong password with ${mech}`);
  await withClient(`mongodb://reader:pw@${host}/?${opts}`, async c => {
    assert.equal(await c.db('app').collection('node').countDocuments({ mech }), 1);
    await assert.rejects(c.db('app').collection('node').insertOne({ by: 'reader' }),
      e => { assert.equal(e.code, 13, String(e)); return true; }, `insert by reader with ${mech}`);
  });
}

// MONGODB-X509: the certificate's subject is the user, in $external.
const x509 = `authMechanism=MONGODB-X509&${tls}&tlsCertificateKeyFile=`;
await withClient(`mongodb://${host}/?${x509}${encodeURIComponent(certFile)}`, async c => {
  assert.equal(await whoami(c), `${subject}@$external`);
  await c.db('app').collection('node').insertOne({ by: 'x509' });
});
// A certificate the CA signed for a subject that is no user.
await refused(`mongodb://${host}/?${x509}${encodeURIComponent(strangerFile)}`, 18, 'X.509 without a user');
console.log('OK');
