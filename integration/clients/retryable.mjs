// Checks retryable writes with the MongoDB Node.js driver against a
// one-member replica set run with --enable-test-commands: an insert whose
// connection the server closes (failCommand) is retried and writes once,
// and an $inc whose reply carries a retryable writeConcernError after it
// ran is retried and applies once. Prints OK.
// Usage: node retryable.mjs <uri>
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';

const client = new MongoClient(process.argv[2], { serverSelectionTimeoutMS: 5000 });
const failOnce = (cmd, failure) => client.db('admin').command({
  configureFailPoint: 'failCommand', mode: { times: 1 }, data: { failCommands: [cmd], ...failure },
});
try {
  await client.connect();
  const coll = client.db('test').collection('retry_node');
  await coll.deleteMany({});
  await failOnce('insert', { closeConnection: true });
  await coll.insertOne({ _id: 1, n: 0 });
  assert.equal(await coll.countDocuments({}), 1);
  await failOnce('update', { writeConcernError: { code: 91, errmsg: 'Replication is being shut down' } });
  const res = await coll.updateOne({ _id: 1 }, { $inc: { n: 1 } });
  assert.equal(res.modifiedCount, 1);
  assert.equal((await coll.findOne({ _id: 1 })).n, 1, 'the retried $inc applied twice');
  console.log('OK');
} finally {
  await client.close();
}
