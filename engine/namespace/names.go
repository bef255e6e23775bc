package namespace

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lethedb/lethe/mongoerr"
)

// checkNameText refuses a database or collection name that is not valid
// UTF-8 or holds a control character. BSON strings are UTF-8, and every
// driver decodes the names listDatabases and listCollections return: one
// name it cannot decode makes those commands fail for every client, and a
// control character makes a name that no shell can type or print.
func checkNameText(kind, name string) error {
	if !utf8.ValidString(name) {
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid %s name: it is not valid UTF-8", kind)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return mongoerr.New(mongoerr.InvalidNamespace, "Invalid %s name: %q holds a control character", kind, name)
		}
	}
	return nil
}

// Validate checks database and collection names as MongoDB does.
func Validate(db, coll string) error {
	if err := ValidateDB(db); err != nil {
		return err
	}
	if err := checkNameText("collection", coll); err != nil {
		return err
	}
	switch {
	case coll == "":
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s.'", db)
	case strings.ContainsRune(coll, 0), strings.HasPrefix(coll, "$"), strings.Contains(coll, "$") && !strings.HasPrefix(coll, "system."):
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid collection name: %s", coll)
	case strings.HasPrefix(coll, ".") || strings.HasSuffix(coll, "."):
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s.%s'", db, coll)
	case len(db)+1+len(coll) > 255:
		return mongoerr.New(mongoerr.InvalidNamespace, "Fully qualified namespace is too long. Namespace: %s.%s Max: 255", db, coll)
	}
	return nil
}

// ValidateDB checks a database name as MongoDB does.
func ValidateDB(db string) error {
	if err := checkNameText("database", db); err != nil {
		return err // before any message quotes the name
	}
	if db == "" || len(db) >= 64 || strings.ContainsAny(db, "/\\. \"$\x00") {
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid database name: '%s'", db)
	}
	return nil
}
