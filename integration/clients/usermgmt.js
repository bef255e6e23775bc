// User and role management through mongosh's helpers, as an administrator
// uses them: run by integration/mongosh_test.go. Any failed check throws,
// which makes mongosh exit non-zero.
function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
}
function roleNames(roles) {
  return roles.map(r => r.role + '@' + r.db).sort().join();
}

const shop = db.getSiblingDB('shop');
shop.createUser({ user: 'ann', pwd: 'ann-pass', roles: ['readWrite'], customData: { team: 'sales' } });

const users = shop.getUsers().users; // mongosh returns usersInfo's reply
check(users.length === 1 && users[0].user === 'ann' && users[0].db === 'shop', 'getUsers lists ann');
check(users[0].credentials === undefined, 'getUsers hides credentials');
check(users[0].mechanisms.sort().join() === 'SCRAM-SHA-1,SCRAM-SHA-256', 'mechanisms of ann');

let ann = shop.getUser('ann');
check(ann._id === 'shop.ann' && roleNames(ann.roles) === 'readWrite@shop', 'getUser ann');
check(ann.customData.team === 'sales', 'customData');
check(shop.getUser('nobody') === null, 'getUser of a missing user is null');

let dup = false;
try { shop.createUser({ user: 'ann', pwd: 'x', roles: [] }); } catch (e) { dup = e.code === 51003; }
check(dup, 'createUser of an existing user is 51003');

shop.updateUser('ann', { customData: { team: 'ops' }, pwd: 'new-pass' });
check(shop.getUser('ann').customData.team === 'ops', 'updateUser customData');

shop.grantRolesToUser('ann', [{ role: 'read', db: 'reporting' }]);
check(roleNames(shop.getUser('ann').roles) === 'read@reporting,readWrite@shop', 'grantRolesToUser');
shop.revokeRolesFromUser('ann', ['readWrite']);
check(roleNames(shop.getUser('ann').roles) === 'read@reporting', 'revokeRolesFromUser');

shop.createRole({
  role: 'orderReader',
  privileges: [{ resource: { db: 'shop', collection: 'orders' }, actions: ['find'] }],
  roles: [],
});
const roles = shop.getRoles({ showPrivileges: true }).roles;
check(roles.length === 1 && roles[0].role === 'orderReader' && !roles[0].isBuiltin, 'getRoles');
check(roles[0].privileges[0].actions.join() === 'find', 'getRoles privileges');
check(shop.getRole('orderReader').role === 'orderReader', 'getRole');
shop.grantPrivilegesToRole('orderReader', [{ resource: { db: 'shop', collection: 'orders' }, actions: ['insert'] }]);
check(shop.getRole('orderReader', { showPrivileges: true }).privileges[0].actions.sort().join() === 'find,insert',
  'grantPrivilegesToRole merges actions');
const read = shop.getRole('read', { showPrivileges: true });
check(read.isBuiltin && read.privileges.some(p => p.actions.includes('find')), 'built-in read shows its privileges');
shop.grantRolesToUser('ann', ['orderReader']);
check(roleNames(shop.getUser('ann').roles) === 'orderReader@shop,read@reporting', 'grant a user-defined role');

let missing = false;
try { shop.grantRolesToUser('ann', ['nosuch']); } catch (e) { missing = e.code === 31; }
check(missing, 'granting a missing role is RoleNotFound');

check(shop.getSiblingDB('admin').system.users.countDocuments({ user: 'ann' }) === 1, 'stored in admin.system.users');

shop.dropRole('orderReader');
check(roleNames(shop.getUser('ann').roles) === 'read@reporting', 'dropRole takes the role from its users');
check(shop.dropUser('ann').ok === 1, 'dropUser');
check(shop.getUsers().users.length === 0, 'no users left');
print('OK');
