package sysns

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

func TestGuards(t *testing.T) {
	guards := Guards([]string{"admin.system.users", "admin.system.roles"})
	for _, c := range []struct {
		db   string
		cmd  bson.D
		want mongoerr.Code // 0: allowed
	}{
		{"test", bson.D{{Key: "insert", Value: "c"}}, 0},
		{"test", bson.D{{Key: "insert", Value: "system.foo"}}, mongoerr.InvalidNamespace},
		{"test", bson.D{{Key: "update", Value: "system.views"}}, mongoerr.InvalidNamespace},
		{"admin", bson.D{{Key: "delete", Value: "system.users"}}, mongoerr.Unauthorized},
		{"admin", bson.D{{Key: "create", Value: "system.users"}}, 0},
		{"test", bson.D{{Key: "create", Value: "system.profile"}}, 0},
		{"test", bson.D{{Key: "createIndexes", Value: "system.bar"}}, mongoerr.InvalidNamespace},
		{"admin", bson.D{{Key: "renameCollection", Value: "test.c"}, {Key: "to", Value: "admin.system.roles"}}, mongoerr.Unauthorized},
		{"admin", bson.D{{Key: "renameCollection", Value: "test.c"}, {Key: "to", Value: "test.d"}}, 0},
	} {
		body, err := bson.Marshal(c.cmd)
		if err != nil {
			t.Fatal(err)
		}
		err = guards[c.cmd[0].Key](&command.Request{DB: c.db, Name: c.cmd[0].Key, Body: body})
		var me *mongoerr.Error
		switch {
		case c.want == 0 && err != nil:
			t.Errorf("%s %v: %v", c.db, c.cmd, err)
		case c.want != 0 && (!errors.As(err, &me) || me.Code != c.want):
			t.Errorf("%s %v: %v, want code %d", c.db, c.cmd, err, c.want)
		}
	}
}
