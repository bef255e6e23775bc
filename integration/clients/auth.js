// Access control through mongosh over TLS, as a user logs in: run by
// integration/auth_clients_test.go with --tls --tlsCAFile, -u writer -p pw
// --authenticationDatabase app. Any failed check throws, which makes
// mongosh exit non-zero.
function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
}
function fails(fn, code, what) {
  try {
    fn();
  } catch (e) {
    check(e.code === code, what + ': code ' + e.code + ' (' + e.message + '), want ' + code);
    return;
  }
  throw new Error('check failed: ' + what + ' succeeded');
}
function whoami() {
  const users = db.runCommand({ connectionStatus: 1 }).authInfo.authenticatedUsers;
  return users.map(u => u.user + '@' + u.db).join();
}

const app = db.getSiblingDB('app');
check(whoami() === 'writer@app', 'connected as ' + whoami());
app.notes.insertOne({ _id: 1, by: 'writer' });
check(app.notes.findOne({ _id: 1 }).by === 'writer', 'find after insert');

// db.auth with a wrong password fails with AuthenticationFailed (18); the
// right one works.
fails(() => app.auth('writer', 'wrong'), 18, 'db.auth with a wrong password');
check(app.auth('writer', 'pw').ok === 1, 'db.auth with the right password');
check(whoami() === 'writer@app', 'after db.auth: ' + whoami());

// A read-only user reads, and is refused writes with Unauthorized (13).
check(app.auth({ user: 'reader', pwd: 'pw', mechanism: 'SCRAM-SHA-1' }).ok === 1, 'db.auth as reader with SCRAM-SHA-1');
check(whoami() === 'reader@app', 'after db.auth as reader: ' + whoami());
check(app.notes.countDocuments({}) === 1, 'reader reads');
fails(() => app.notes.insertOne({ _id: 2 }), 13, 'insert by a read-only user');
print('OK');
