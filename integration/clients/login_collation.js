// A case-insensitive login through mongosh: usernames are unique under
// {locale: "en", strength: 2}, so "Alice" and "alice" cannot both
// register, and a login that names the collation finds the user through
// the index. Run by integration/mongosh_test.go.
function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
}
const ci = { locale: 'en', strength: 2 };

db.users.drop();
db.users.createIndex({ username: 1 }, { unique: true, collation: ci });
const ix = db.users.getIndexes().find(i => i.name === 'username_1');
check(ix && ix.collation && ix.collation.locale === 'en' && ix.collation.strength === 2 && ix.collation.version === '57.1',
  'the index keeps its collation: ' + JSON.stringify(ix));

db.users.insertOne({ username: 'Alice', password: 'wonderland' });
let dup = null;
try {
  db.users.insertOne({ username: 'alice', password: 'other' });
} catch (e) {
  dup = e;
}
check(dup !== null && dup.code === 11000, 'alice after Alice is a duplicate key: ' + dup);
db.users.insertOne({ username: 'Bob', password: 'builder' });
check(db.users.countDocuments({}) === 2, 'two users');

function login(name, password) {
  return db.users.find({ username: name, password: password }).collation(ci).toArray();
}
const found = login('ALICE', 'wonderland');
check(found.length === 1 && found[0].username === 'Alice', 'ALICE logs in as Alice: ' + JSON.stringify(found));
check(login('aLiCe', 'nope').length === 0, 'a wrong password does not');
check(db.users.find({ username: 'ALICE' }).toArray().length === 0, 'without the collation ALICE is nobody');

const plan = db.users.find({ username: 'ALICE' }).collation(ci).explain();
const winning = JSON.stringify(plan.queryPlanner.winningPlan);
check(winning.includes('IXSCAN') && winning.includes('username_1'), 'the login uses the index: ' + winning);
check(plan.queryPlanner.collation && plan.queryPlanner.collation.strength === 2, 'explain shows the collation: ' + JSON.stringify(plan.queryPlanner));
const simplePlan = JSON.stringify(db.users.find({ username: 'ALICE' }).explain().queryPlanner.winningPlan);
check(simplePlan.includes('COLLSCAN'), 'without the collation the index is not used: ' + simplePlan);

// The same through findOneAndUpdate and a collated count.
const updated = db.users.findOneAndUpdate({ username: 'bob' }, { $set: { lastLogin: 1 } }, { collation: ci, returnDocument: 'after' });
check(updated && updated.username === 'Bob' && updated.lastLogin === 1, 'findOneAndUpdate under the collation: ' + JSON.stringify(updated));
check(db.users.countDocuments({ username: 'BOB' }, { collation: ci }) === 1, 'countDocuments under the collation');
print('OK');
