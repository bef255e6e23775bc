// The TTL seed example through mongosh against a server started with
// --clock=manual: run by integration/mongosh_test.go.
function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
}
function ids() {
  return db.coll.find({}, { _id: 0, id: 1 }).sort({ id: 1 }).toArray().map(d => d.id).join();
}

db.coll.drop();
db.coll.createIndex({ "_ts": 1 }, { expireAfterSeconds: 10 });
db.coll.insertMany([
  { id: 1, location: 'Paris', ttl: 20.0 },         // honoured: 20 s
  { id: 2, location: 'Oslo', ttl: NumberInt(20) }, // honoured
  { id: 3, location: 'Rome', ttl: NumberLong('20') }, // honoured
  { id: 4, location: 'Lima', ttl: -1 },            // never expires
  { id: 5, location: 'Kyiv' },                     // collection default: 10 s
  { id: 6, location: 'Pune', ttl: 20.5 },          // invalid: default applies
  { id: 7, location: 'Baku', ttl: NumberLong('2147483649') }, // invalid
  { id: 8, location: 'Nice', ttl: 0 },             // invalid
  { id: 9, location: 'Oran', ttl: -2 },            // invalid
  { id: 10, location: 'Riga', ttl: '20' },         // invalid
  { id: 11, location: 'Lyon', ttl: null },         // invalid
  { id: 12, location: 'Bern', nested: { ttl: 20 } },// nested: ordinary data
]);
check(ids() === '1,2,3,4,5,6,7,8,9,10,11,12', 'all visible at first: ' + ids());
db.adminCommand({ advanceClock: 9.999 });
check(ids() === '1,2,3,4,5,6,7,8,9,10,11,12', 'all visible just before 10 s: ' + ids());
const now = db.adminCommand({ advanceClock: 0.001 }).now;
check(now instanceof Date, 'advanceClock returns the new time');
check(ids() === '1,2,3,4', 'after 10 s only own valid ttl and -1 remain: ' + ids());
db.adminCommand({ advanceClock: 10 });
check(ids() === '4', 'after 20 s only ttl -1 remains: ' + ids());
check(db.coll.countDocuments({}) === 1, 'countDocuments');
print('OK');
