// Checks with the MongoDB Node.js driver that a transaction, which Lethe
// does not support yet, is refused rather than applied statement by
// does not support yet, is refused rather than applied statement by
// statement: startTransaction + insert + abortTransaction leaves nothing,
// and withTransaction fails at its first attempt with
// OperationNotSupportedInTransaction (263) instead of retrying. Prints OK.
// Usage: node txn.mjs <uri>
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';

const client = new MongoClient(process.argv[2], { serverSelectionTimeoutMS: 5000 });
try {
  await client.connect();
  const coll = client.db('test').collection('txn_node');
  await coll.deleteMany({});
  const session = client.startSession();
  try {
    session.startTransaction();
    await assert.rejects(coll.insertOne({ _id: 1 }, { session }), (err) => err.code === 263);
    await session.abortTransaction();
    assert.equal(await coll.countDocuments({}), 0, 'the aborted insert is visible');

    let calls = 0;
    const started = Date.now();
    await assert.rejects(
      session.withTransaction(async () => {
        calls++;
        await coll.insertOne({ _id: 2 }, { session });
      }),
      (err) => err.code === 263 && !err.hasErrorLabel('TransientTransactionError'),
    );
    assert.equal(calls, 1, 'withTransaction ran its callback again');
    assert.ok(Date.now() - started < 10000, 'withTransaction took its retry time');
    assert.equal(await coll.countDocuments({}), 0, 'the refused insert is visible');
  } finally {
    await session.endSession();
  }
  console.log('OK');
} finally {
  await client.close();
}
