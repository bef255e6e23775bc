package auth

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// aggregateRule: find on the collection read, unless the pipeline opens
// with a stage that reads something else, plus what each stage needs —
// on the collections it reads or writes, or on the cluster.
func aggregateRule(db string, body bson.Raw) ([]Privilege, error) {
	coll, _ := body.Lookup("aggregate").StringValueOK() // "" for {aggregate: 1}
	pipeline, ok := body.Lookup("pipeline").ArrayOK()
	if !ok {
		return nil, fmt.Errorf("auth: aggregate needs a pipeline array")
	}
	stages, err := pipelineStages(pipeline)
	if err != nil {
		return nil, err
	}
	var privs []Privilege
	source := Resource{DB: db, Collection: coll}
	if len(stages) == 0 || !readsNoCollection[stages[0].Key()] {
		if coll == "" {
			source = Resource{DB: db} // refused by the server in any case
		}
		privs = append(privs, Privilege{Resource: source, Actions: acts("find")})
	}
	bypass := trueValue(body.Lookup("bypassDocumentValidation"))
	for _, st := range stages {
		more, err := stagePrivileges(db, coll, st, bypass)
		if err != nil {
			return nil, err
		}
		privs = append(privs, more...)
	}
	return privs, nil
}

// readsNoCollection are the first stages that do not read the collection
// the aggregate names, so need no find on it ($changeStream asks for its
// own find).
var readsNoCollection = map[string]bool{
	"$collStats": true, "$indexStats": true, "$currentOp": true,
	"$listLocalSessions": true, "$listSessions": true, "$documents": true,
	"$changeStream": true, "$planCacheStats": true, "$listSearchIndexes": true,
}

func pipelineStages(pipeline bson.RawArray) ([]bson.RawElement, error) {
	values, err := pipeline.Values()
	if err != nil {
		return nil, fmt.Errorf("auth: pipeline: %w", err)
	}
	out := make([]bson.RawElement, 0, len(values))
	for _, v := range values {
		doc, ok := v.DocumentOK()
		if !ok {
			return nil, fmt.Errorf("auth: a pipeline stage must be a document")
		}
		el, err := doc.IndexErr(0)
		if err != nil {
			return nil, fmt.Errorf("auth: empty pipeline stage")
		}
		out = append(out, el)
	}
	return out, nil
}

// pipelinePrivileges is what a sub-pipeline (of $lookup, $unionWith,
// $facet, or a view) needs besides reading its source.
func pipelinePrivileges(db string, pipeline bson.RawArray) ([]Privilege, error) {
	stages, err := pipelineStages(pipeline)
	if err != nil {
		return nil, err
	}
	var privs []Privilege
	for _, st := range stages {
		more, err := stagePrivileges(db, "", st, false)
		if err != nil {
			return nil, err
		}
		privs = append(privs, more...)
	}
	return privs, nil
}

// stagePrivileges is what one stage needs; coll is the collection the
// aggregate runs on ("" when none).
func stagePrivileges(db, coll string, stage bson.RawElement, bypass bool) ([]Privilege, error) {
	v := stage.Value()
	spec, _ := v.DocumentOK()
	here := Resource{DB: db, Collection: coll}
	switch stage.Key() {
	case "$collStats":
		return []Privilege{{Resource: here, Actions: acts("collStats")}}, nil
	case "$indexStats":
		return []Privilege{{Resource: here, Actions: acts("indexStats")}}, nil
	case "$planCacheStats":
		return []Privilege{{Resource: here, Actions: acts("planCacheRead")}}, nil
	case "$listSearchIndexes":
		return []Privilege{{Resource: here, Actions: acts("listSearchIndexes")}}, nil
	case "$currentOp":
		if trueValue(spec.Lookup("allUsers")) {
			return []Privilege{onCluster(acts("inprog"))}, nil
		}
		return nil, nil
	case "$listLocalSessions", "$listSessions":
		if trueValue(spec.Lookup("allUsers")) {
			return []Privilege{onCluster(acts("listSessions"))}, nil
		}
		return nil, nil
	case "$changeStream":
		target := here
		switch {
		case trueValue(spec.Lookup("allChangesForCluster")):
			target = Resource{} // every normal collection of every database
		case coll == "":
			target = Resource{DB: db}
		}
		return []Privilege{{Resource: target, Actions: acts("changeStream", "find")}}, nil
	case "$out":
		return outPrivileges(db, v, bypass)
	case "$merge":
		return mergeStagePrivileges(db, v, bypass)
	case "$lookup", "$graphLookup":
		return joinPrivileges(db, spec, "from")
	case "$unionWith":
		if name, ok := v.StringValueOK(); ok {
			return []Privilege{onColl(db, name, acts("find"))}, nil
		}
		return joinPrivileges(db, spec, "coll")
	case "$facet":
		var privs []Privilege
		elems, _ := spec.Elements()
		for _, e := range elems {
			p, ok := e.Value().ArrayOK()
			if !ok {
				return nil, fmt.Errorf("auth: $facet %q must be a pipeline", e.Key())
			}
			more, err := pipelinePrivileges(db, p)
			if err != nil {
				return nil, err
			}
			privs = append(privs, more...)
		}
		return privs, nil
	}
	return nil, nil
}

// joinPrivileges is what a stage that reads another collection needs:
// find on the collection its field names, and what its own pipeline does.
func joinPrivileges(db string, spec bson.Raw, field string) ([]Privilege, error) {
	var privs []Privilege
	if from, ok := foreignNamespace(db, spec.Lookup(field)); ok {
		privs = append(privs, Privilege{Resource: from, Actions: acts("find")})
	}
	if p, ok := spec.Lookup("pipeline").ArrayOK(); ok {
		more, err := pipelinePrivileges(db, p)
		if err != nil {
			return nil, err
		}
		privs = append(privs, more...)
	}
	return privs, nil
}

// foreignNamespace reads a stage's "from": a collection of the database,
// or {db, coll} for another one.
func foreignNamespace(db string, v bson.RawValue) (Resource, bool) {
	if name, ok := v.StringValueOK(); ok && name != "" {
		return Resource{DB: db, Collection: name}, true
	}
	if doc, ok := v.DocumentOK(); ok {
		d, _ := doc.Lookup("db").StringValueOK()
		c, _ := doc.Lookup("coll").StringValueOK()
		if d != "" && c != "" {
			return Resource{DB: d, Collection: c}, true
		}
	}
	return Resource{}, false
}

// outPrivileges: $out replaces its target, so it needs insert and remove
// there (and bypassDocumentValidation when asked).
func outPrivileges(db string, v bson.RawValue, bypass bool) ([]Privilege, error) {
	target, ok := foreignNamespace(db, v)
	if !ok {
		return nil, fmt.Errorf("auth: $out needs a target collection")
	}
	a := acts("insert", "remove")
	if bypass {
		a = append(a, "bypassDocumentValidation")
	}
	return []Privilege{{Resource: target, Actions: a}}, nil
}

// mergeStagePrivileges: $merge needs update on its target unless
// whenMatched is "fail", and insert when whenNotMatched is "insert" (the
// default), as MongoDB's merge strategies do.
func mergeStagePrivileges(db string, v bson.RawValue, bypass bool) ([]Privilege, error) {
	var target Resource
	var spec bson.Raw
	if name, ok := v.StringValueOK(); ok {
		target = Resource{DB: db, Collection: name}
	} else if doc, ok := v.DocumentOK(); ok {
		spec = doc
		into := doc.Lookup("into")
		t, ok := foreignNamespace(db, into)
		if !ok {
			return nil, fmt.Errorf("auth: $merge needs a target collection")
		}
		target = t
	} else {
		return nil, fmt.Errorf("auth: $merge needs a target collection")
	}
	whenMatched, _ := spec.Lookup("whenMatched").StringValueOK()
	whenNotMatched, ok := spec.Lookup("whenNotMatched").StringValueOK()
	if !ok {
		whenNotMatched = "insert"
	}
	var a []Action
	if whenMatched != "fail" {
		a = append(a, "update")
	}
	if whenNotMatched == "insert" {
		a = append(a, "insert")
	}
	if bypass {
		a = append(a, "bypassDocumentValidation")
	}
	privs := []Privilege{{Resource: target, Actions: a}}
	if p, ok := spec.Lookup("whenMatched").ArrayOK(); ok {
		more, err := pipelinePrivileges(db, p)
		if err != nil {
			return nil, err
		}
		privs = append(privs, more...)
	}
	return privs, nil
}
