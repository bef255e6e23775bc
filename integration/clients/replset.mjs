// Connects with the MongoDB Node.js driver to a one-member replica set named
// in the URI, writes and reads its write back in a causally consistent
// session, and checks what the set says of itself. Prints OK.
// Usage: node replset.mjs <uri>
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';

const client = new MongoClient(process.argv[2], { serverSelectionTimeoutMS: 5000 });
try {
  await client.connect();
  const hello = await client.db('admin').command({ hello: 1 });
  assert.equal(hello.setName, 'rs0');
  assert.equal(hello.isWritablePrimary, true);
  const status = await client.db('admin').command({ replSetGetStatus: 1 });
  assert.equal(status.members[0].stateStr, 'PRIMARY');

  const session = client.startSession({ causalConsistency: true });
  try {
    const coll = client.db('test').collection('rs_node', { readConcern: { level: 'majority' }, writeConcern: { w: 'majority' } });
    await coll.insertOne({ _id: 1, at: 'node' }, { session });
    assert.ok(session.operationTime, 'the session saw no operationTime');
    const doc = await coll.findOne({ _id: 1 }, { session });
    assert.equal(doc.at, 'node');
  } finally {
    await session.endSession();
  }
  await assert.rejects(
    client.db('test').collection('rs_node').insertOne({ _id: 2 }, { writeConcern: { w: 2 } }),
    (err) => err.code === 100 || err.writeConcernError?.code === 100,
  );
  console.log('OK');
} finally {
  await client.close();
}
