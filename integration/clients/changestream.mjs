// Watches a collection with the MongoDB Node.js driver on a one-member
// replica set: sees an insert, an update and a delete in order, then
// resumes after the first event; then, on a collection with
// changeStreamPreAndPostImages, gets the pre- and post-images of an update
// and the pre-image of a delete. Prints OK.
// Usage: node changestream.mjs <uri>
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';

const client = new MongoClient(process.argv[2], { serverSelectionTimeoutMS: 5000 });
try {
  await client.connect();
  const coll = client.db('test').collection('cs_node');
  await coll.insertOne({ _id: 0 });
  const stream = coll.watch([], { maxAwaitTimeMS: 100 });
  await stream.tryNext(); // opens the cursor before the writes
  await coll.insertOne({ _id: 1, a: 1 });
  await coll.updateOne({ _id: 1 }, { $set: { a: 2 } });
  await coll.deleteOne({ _id: 1 });
  const ins = await stream.next();
  assert.equal(ins.operationType, 'insert');
  assert.deepEqual(ins.fullDocument, { _id: 1, a: 1 });
  const upd = await stream.next();
  assert.equal(upd.operationType, 'update');
  assert.deepEqual(upd.updateDescription.updatedFields, { a: 2 });
  const del = await stream.next();
  assert.equal(del.operationType, 'delete');
  assert.deepEqual(del.documentKey, { _id: 1 });
  await stream.close();

  const resumed = coll.watch([], { resumeAfter: ins._id });
  assert.equal((await resumed.next()).operationType, 'update');
  await resumed.close();

  const db = client.db('test');
  await db.collection('cs_node_images').drop();
  const images = await db.createCollection('cs_node_images', { changeStreamPreAndPostImages: { enabled: true } });
  const imaged = images.watch([], { fullDocument: 'required', fullDocumentBeforeChange: 'required', maxAwaitTimeMS: 100 });
  await imaged.tryNext();
  await images.insertOne({ _id: 1, a: 1 });
  await images.updateOne({ _id: 1 }, { $inc: { a: 1 } });
  await images.updateOne({ _id: 1 }, { $inc: { a: 1 } });
  await images.deleteOne({ _id: 1 });
  assert.equal((await imaged.next()).operationType, 'insert');
  const first = await imaged.next();
  assert.equal(first.operationType, 'update');
  assert.deepEqual(first.fullDocumentBeforeChange, { _id: 1, a: 1 });
  assert.deepEqual(first.fullDocument, { _id: 1, a: 2 }); // as of that update
  assert.equal((await imaged.next()).operationType, 'update');
  const gone = await imaged.next();
  assert.equal(gone.operationType, 'delete');
  assert.deepEqual(gone.fullDocumentBeforeChange, { _id: 1, a: 3 });
  await imaged.close();
  console.log('OK');
} finally {
  await client.close();
}
