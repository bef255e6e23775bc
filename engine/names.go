package engine

import (
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
