package auth

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// rule computes the privileges of a command whose needs depend on its
// arguments.
type rule func(db string, body bson.Raw) ([]Privilege, error)

func ruleFor(cmd string) (rule, bool) {
	switch cmd {
	case "insert":
		return writeRule("insert", "insert"), true
	case "update":
		return updateRule, true
	case "findAndModify", "findandmodify":
		return func(db string, body bson.Raw) ([]Privilege, error) { return findAndModifyRule(cmd, db, body) }, true
	case "aggregate":
		return aggregateRule, true
	case "create":
		return createRule, true
	case "collMod":
		return collModRule, true
	case "renameCollection":
		return renameRule, true
	case "currentOp":
		return currentOpRule, true
	case "convertToCapped":
		return func(db string, body bson.Raw) ([]Privilege, error) {
			coll, err := collectionArg(cmd, body)
			return []Privilege{onColl(db, coll, acts("convertToCapped"))}, err
		}, true
	case "createUser", "updateUser", "grantRolesToUser", "revokeRolesFromUser",
		"createRole", "updateRole", "grantRolesToRole", "revokeRolesFromRole",
		"grantPrivilegesToRole", "revokePrivilegesFromRole", "usersInfo", "rolesInfo":
		return func(db string, body bson.Raw) ([]Privilege, error) { return userAdminRule(cmd, db, body) }, true
	case "_mergeAuthzCollections":
		return mergeAuthzRule, true
	}
	return nil, false
}

// writeRule is insert's: the action on the collection, and
// bypassDocumentValidation when the command asks to bypass validation.
func writeRule(cmd string, action Action) rule {
	return func(db string, body bson.Raw) ([]Privilege, error) {
		coll, err := collectionArg(cmd, body)
		if err != nil {
			return nil, err
		}
		a := []Action{action}
		if trueValue(body.Lookup("bypassDocumentValidation")) {
			a = append(a, "bypassDocumentValidation")
		}
		return []Privilege{onColl(db, coll, a)}, nil
	}
}

// updateRule: update, and insert as well when any statement upserts.
func updateRule(db string, body bson.Raw) ([]Privilege, error) {
	privs, err := writeRule("update", "update")(db, body)
	if err != nil {
		return nil, err
	}
	if updates, ok := body.Lookup("updates").ArrayOK(); ok {
		values, _ := updates.Values()
		for _, v := range values {
			if stmt, ok := v.DocumentOK(); ok && trueValue(stmt.Lookup("upsert")) {
				privs[0].Actions = append(privs[0].Actions, "insert")
				break
			}
		}
	}
	return privs, nil
}

// findAndModifyRule: find, and remove for a removal or update (with insert
// for an upsert) otherwise.
func findAndModifyRule(cmd, db string, body bson.Raw) ([]Privilege, error) {
	coll, err := collectionArg(cmd, body)
	if err != nil {
		return nil, err
	}
	a := acts("find")
	if trueValue(body.Lookup("remove")) {
		a = append(a, "remove")
	} else {
		a = append(a, "update")
		if trueValue(body.Lookup("upsert")) {
			a = append(a, "insert")
		}
	}
	if trueValue(body.Lookup("bypassDocumentValidation")) {
		a = append(a, "bypassDocumentValidation")
	}
	return []Privilege{onColl(db, coll, a)}, nil
}

// createRule: createCollection; a view also needs find on what it reads.
func createRule(db string, body bson.Raw) ([]Privilege, error) {
	coll, err := collectionArg("create", body)
	if err != nil {
		return nil, err
	}
	privs := []Privilege{onColl(db, coll, acts("createCollection"))}
	return viewSources(db, body, privs)
}

// collModRule: collMod; redefining a view also needs find on its sources.
func collModRule(db string, body bson.Raw) ([]Privilege, error) {
	coll, err := collectionArg("collMod", body)
	if err != nil {
		return nil, err
	}
	privs := []Privilege{onColl(db, coll, acts("collMod"))}
	return viewSources(db, body, privs)
}

func viewSources(db string, body bson.Raw, privs []Privilege) ([]Privilege, error) {
	if on, ok := body.Lookup("viewOn").StringValueOK(); ok {
		privs = append(privs, onColl(db, on, acts("find")))
	}
	if p, ok := body.Lookup("pipeline").ArrayOK(); ok {
		more, err := pipelinePrivileges(db, p)
		if err != nil {
			return nil, err
		}
		privs = append(privs, more...)
	}
	return privs, nil
}

// renameRule is the general case of renameCollection: find and
// dropCollection on the source, insert and createIndex (and dropCollection
// with dropTarget) on the target. Authorize also accepts a rename within a
// database by renameCollectionSameDB, as MongoDB does.
func renameRule(_ string, body bson.Raw) ([]Privilege, error) {
	src, dst, err := renameNamespaces(body)
	if err != nil {
		return nil, err
	}
	target := acts("insert", "createIndex")
	if trueValue(body.Lookup("dropTarget")) {
		target = append(target, "dropCollection")
	}
	return []Privilege{
		{Resource: src, Actions: acts("find", "dropCollection")},
		{Resource: dst, Actions: target},
	}, nil
}

func renameNamespaces(body bson.Raw) (src, dst Resource, err error) {
	from, ok1 := body.Lookup("renameCollection").StringValueOK()
	to, ok2 := body.Lookup("to").StringValueOK()
	if !ok1 || !ok2 {
		return src, dst, fmt.Errorf("auth: renameCollection needs the namespaces 'renameCollection' and 'to'")
	}
	src, ok1 = parseNamespace(from)
	dst, ok2 = parseNamespace(to)
	if !ok1 || !ok2 {
		return src, dst, fmt.Errorf("auth: renameCollection: invalid namespace")
	}
	return src, dst, nil
}

// parseNamespace splits "db.coll".
func parseNamespace(ns string) (Resource, bool) {
	for i := 0; i < len(ns); i++ {
		if ns[i] == '.' {
			if i == 0 || i == len(ns)-1 {
				return Resource{}, false
			}
			return Resource{DB: ns[:i], Collection: ns[i+1:]}, true
		}
	}
	return Resource{}, false
}

// currentOpRule: inprog on the cluster, unless the client asks only for
// its own operations ($ownOps).
func currentOpRule(_ string, body bson.Raw) ([]Privilege, error) {
	if trueValue(body.Lookup("$ownOps")) {
		return nil, nil
	}
	return []Privilege{onCluster(acts("inprog"))}, nil
}
