// mongosh over several Lethe servers sharing one store, named together in
// its connection string: run by integration/manyservers_topology_test.go.
// The shell sees a mongos, writes and reads through whichever server the
// driver picks, and runs a transaction. Any failed check throws, which
// makes mongosh exit non-zero.
function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
}

const hello = db.hello();
check(hello.msg === 'isdbgrid', 'hello.msg is isdbgrid: ' + JSON.stringify(hello));
check(hello.isWritablePrimary === true, 'writable');
check(hello.setName === undefined, 'no set name');

const coll = db.getSiblingDB('topo').shell;
for (let i = 0; i < 20; i++) {
  coll.insertOne({ _id: i });
  check(coll.findOne({ _id: i })._id === i, 'read ' + i);
}
check(coll.countDocuments({}) === 20, 'count');

const session = db.getMongo().startSession();
session.withTransaction(() => {
  const c = session.getDatabase('topo').shell;
  c.insertOne({ _id: 'txn1' });
  c.insertOne({ _id: 'txn2' });
});
session.endSession();
check(coll.countDocuments({ _id: { $in: ['txn1', 'txn2'] } }) === 2, 'the transaction committed');
print('OK');
