package collation

import (
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// Version is the collator version mongod 7 reports: that of the ICU it is
// built with. Stored collations carry it, and a collation that names
// another is refused.
const Version = "57.1"

// Spec is a parsed, complete collation: every field with its value, the
// locale's default where the document gave none.
type Spec struct {
	Locale          string
	CaseLevel       bool
	CaseFirst       string // "upper", "lower" or "off"
	Strength        int    // 1 to 5
	NumericOrdering bool
	Alternate       string // "non-ignorable" or "shifted"
	MaxVariable     string // "punct" or "space"
	Normalization   bool
	Backwards       bool
}

// Document is the collation as mongod reports it back: every field, in
// mongod's order, and the version.
func (s Spec) Document() bson.Raw {
	idx, doc := bsoncore.AppendDocumentStart(nil)
	doc = bsoncore.AppendStringElement(doc, "locale", s.Locale)
	doc = bsoncore.AppendBooleanElement(doc, "caseLevel", s.CaseLevel)
	doc = bsoncore.AppendStringElement(doc, "caseFirst", s.CaseFirst)
	doc = bsoncore.AppendInt32Element(doc, "strength", int32(s.Strength))
	doc = bsoncore.AppendBooleanElement(doc, "numericOrdering", s.NumericOrdering)
	doc = bsoncore.AppendStringElement(doc, "alternate", s.Alternate)
	doc = bsoncore.AppendStringElement(doc, "maxVariable", s.MaxVariable)
	doc = bsoncore.AppendBooleanElement(doc, "normalization", s.Normalization)
	doc = bsoncore.AppendBooleanElement(doc, "backwards", s.Backwards)
	doc = bsoncore.AppendStringElement(doc, "version", Version)
	doc, _ = bsoncore.AppendDocumentEnd(doc, idx)
	return doc
}

// codes of mongod's IDL parser, which parses collation documents.
const (
	codeMissingField mongoerr.Code = 40414
	codeUnknownField mongoerr.Code = 40415
)

// ParseSpec parses and validates a collation document as mongod 7 does.
// simple reports the simple collation: {locale: "simple"}, or an empty
// document, which mongod takes as no collation.
func ParseSpec(doc bson.Raw) (spec Spec, simple bool, err error) {
	if len(doc) <= 5 {
		return Spec{}, true, nil
	}
	if err := doc.Validate(); err != nil {
		return Spec{}, false, mongoerr.New(mongoerr.InvalidBSON, "invalid collation document: %v", err)
	}
	var (
		locale                            string
		haveLocale                        bool
		caseLevel, numeric, norm, bwd     *bool
		caseFirst, alternate, maxVariable string
		strength                          = -1
		version                           string
		haveVersion                       bool
	)
	it := bsonvalue.ElementsOf(doc)
	for {
		name, v, ok := it.Next()
		if !ok {
			break
		}
		field := string(name)
		switch field {
		case "locale":
			if v.Type == bsoncore.TypeNull {
				continue // an explicit null reads as missing
			}
			if v.Type != bsoncore.TypeString {
				return Spec{}, false, wrongType(field, v.Type, "string")
			}
			locale, haveLocale = v.StringValue(), true
		case "caseLevel", "numericOrdering", "normalization":
			if v.Type != bsoncore.TypeBoolean {
				return Spec{}, false, wrongType(field, v.Type, "bool")
			}
			b := v.Boolean()
			switch field {
			case "caseLevel":
				caseLevel = &b
			case "numericOrdering":
				numeric = &b
			default:
				norm = &b
			}
		case "backwards":
			// An optional bool in mongod's IDL, with its own wording.
			if v.Type != bsoncore.TypeBoolean {
				return Spec{}, false, mongoerr.New(mongoerr.TypeMismatch, "Field 'backwards' should be a boolean value, but found: %s", bsonvalue.TypeName(v.Type))
			}
			b := v.Boolean()
			bwd = &b
		case "caseFirst", "alternate", "maxVariable":
			if v.Type != bsoncore.TypeString {
				return Spec{}, false, wrongType(field, v.Type, "string")
			}
			s := v.StringValue()
			valid := map[string][]string{
				"caseFirst":   {"upper", "lower", "off"},
				"alternate":   {"non-ignorable", "shifted"},
				"maxVariable": {"punct", "space"},
			}[field]
			if !contains(valid, s) {
				return Spec{}, false, badEnum(field, s)
			}
			switch field {
			case "caseFirst":
				caseFirst = s
			case "alternate":
				alternate = s
			default:
				maxVariable = s
			}
		case "strength":
			n, err := strengthOf(v)
			if err != nil {
				return Spec{}, false, err
			}
			strength = n
		case "version":
			if v.Type != bsoncore.TypeString {
				return Spec{}, false, wrongType(field, v.Type, "string")
			}
			version, haveVersion = v.StringValue(), true
		default:
			return Spec{}, false, mongoerr.New(codeUnknownField, "BSON field 'collation.%s' is an unknown field.", field)
		}
	}
	if !haveLocale {
		return Spec{}, false, mongoerr.New(codeMissingField, "BSON field 'collation.locale' is missing but a required field")
	}
	if locale == "simple" {
		return Spec{}, true, nil
	}
	if strings.IndexByte(locale, 0) >= 0 {
		return Spec{}, false, mongoerr.New(mongoerr.BadValue, "Field 'locale' cannot contain null byte. Collation spec: %s", shellString(doc))
	}
	if locale == "" {
		return Spec{}, false, mongoerr.New(mongoerr.BadValue, "Field 'locale' cannot be the empty string in: %s", shellString(doc))
	}
	if _, ok, suggestion := resolveLocale(locale); !ok {
		msg := "Field 'locale' is invalid in: " + shellString(doc)
		if suggestion != "" {
			msg += ". Did you mean '" + suggestion + "'?"
		}
		return Spec{}, false, mongoerr.New(mongoerr.BadValue, "%s", msg)
	}
	spec = Spec{Locale: locale, CaseFirst: "off", Strength: 3, Alternate: "non-ignorable", MaxVariable: "punct"}
	base, _, _ := strings.Cut(locale, "@")
	if def := localeDefaults[base]; def != nil {
		def(&spec)
	}
	setBool := func(dst *bool, src *bool) {
		if src != nil {
			*dst = *src
		}
	}
	setBool(&spec.CaseLevel, caseLevel)
	setBool(&spec.NumericOrdering, numeric)
	setBool(&spec.Normalization, norm)
	setBool(&spec.Backwards, bwd)
	if caseFirst != "" {
		spec.CaseFirst = caseFirst
	}
	if alternate != "" {
		spec.Alternate = alternate
	}
	if maxVariable != "" {
		spec.MaxVariable = maxVariable
	}
	if strength > 0 {
		spec.Strength = strength
	}
	if haveVersion && version != Version {
		return Spec{}, false, mongoerr.New(mongoerr.IncompatibleCollationVersion,
			"Requested collation version %s but the only available collator version was %s. Requested collation spec: %s",
			version, Version, shellString(doc))
	}
	if spec.Backwards && spec.Strength == 1 {
		return Spec{}, false, mongoerr.New(mongoerr.BadValue, "'backwards' is invalid with 'strength' of 1 in: %s", shellString(spec.Document()))
	}
	if spec.CaseFirst != "off" && !spec.CaseLevel && spec.Strength < 3 {
		return Spec{}, false, mongoerr.New(mongoerr.BadValue, "'caseFirst' is invalid unless 'caseLevel' is on or 'strength' is greater than 2 in: %s", shellString(spec.Document()))
	}
	return spec, false, nil
}

// strengthOf reads strength: a number, truncated, 1 to 5. mongod's IDL
// checks the range 0 to 5 first, then the enumeration, which has no 0.
func strengthOf(v bsoncore.Value) (int, error) {
	var f float64
	switch v.Type {
	case bsoncore.TypeInt32:
		f = float64(v.Int32())
	case bsoncore.TypeInt64:
		f = float64(v.Int64())
	case bsoncore.TypeDouble:
		f = v.Double()
	case bsoncore.TypeDecimal128:
		d := bson.NewDecimal128(v.Decimal128())
		f, _ = strconv.ParseFloat(d.String(), 64)
	default:
		return 0, wrongType("strength", v.Type, "double", "decimal", "long", "int")
	}
	n := int64(f)
	actual := strconv.FormatInt(n, 10)
	switch {
	case f != f: // NaN
		return 0, mongoerr.New(mongoerr.BadValue, "BSON field 'strength' value must be >= 0, actual value 'nan'")
	case f > 5:
		return 0, mongoerr.New(mongoerr.BadValue, "BSON field 'strength' value must be <= 5, actual value '%s'", actual)
	case f < 0:
		return 0, mongoerr.New(mongoerr.BadValue, "BSON field 'strength' value must be >= 0, actual value '%s'", actual)
	case n == 0:
		return 0, badEnum("strength", "0")
	}
	return int(n), nil
}

func wrongType(field string, got bsoncore.Type, expected ...string) error {
	if len(expected) == 1 {
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field 'collation.%s' is the wrong type '%s', expected type '%s'",
			field, bsonvalue.TypeName(got), expected[0])
	}
	return mongoerr.New(mongoerr.TypeMismatch, "BSON field 'collation.%s' is the wrong type '%s', expected types '[%s]'",
		field, bsonvalue.TypeName(got), strings.Join(expected, ", "))
}

func badEnum(field, value string) error {
	return mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field 'collation.%s' is not a valid value.", value, field)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// shellString prints a collation document as mongod's messages print a
// BSON object: { locale: "xx", strength: 2 }.
func shellString(doc []byte) string {
	var b strings.Builder
	b.WriteString("{")
	it := bsonvalue.ElementsOf(doc)
	first := true
	for {
		name, v, ok := it.Next()
		if !ok {
			break
		}
		if !first {
			b.WriteString(",")
		}
		first = false
		b.WriteString(" ")
		b.Write(name)
		b.WriteString(": ")
		switch v.Type {
		case bsoncore.TypeString:
			b.WriteString(strconv.Quote(v.StringValue()))
		case bsoncore.TypeBoolean:
			b.WriteString(strconv.FormatBool(v.Boolean()))
		case bsoncore.TypeInt32:
			b.WriteString(strconv.Itoa(int(v.Int32())))
		case bsoncore.TypeInt64:
			b.WriteString(strconv.FormatInt(v.Int64(), 10))
		case bsoncore.TypeDouble:
			f := v.Double()
			s := strconv.FormatFloat(f, 'g', -1, 64)
			if f == float64(int64(f)) && !strings.ContainsAny(s, "e.") {
				s += ".0"
			}
			b.WriteString(s)
		case bsoncore.TypeEmbeddedDocument:
			b.WriteString(shellString(v.Data))
		case bsoncore.TypeNull:
			b.WriteString("null")
		default:
			b.WriteString(v.String())
		}
	}
	if first {
		return "{}"
	}
	b.WriteString(" }")
	return b.String()
}
