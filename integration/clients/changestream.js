// mongosh: db.coll.watch() on a one-member replica set prints its events.
// Run by TestMongoshChangeStream; prints OK.
db.cs_sh.drop();
db.cs_sh.insertOne({ _id: 0 });
const stream = db.cs_sh.watch([], { maxAwaitTimeMS: 100 });
stream.tryNext(); // opens the cursor before the writes
db.cs_sh.insertOne({ _id: 1, a: 1 });
db.cs_sh.updateOne({ _id: 1 }, { $set: { a: 2 } });
const ops = [];
while (ops.length < 2) {
  const ev = stream.tryNext();
  if (ev !== null) ops.push(ev.operationType);
}
stream.close();
if (ops.join(',') !== 'insert,update') throw new Error('events ' + ops.join(','));
print('OK');
