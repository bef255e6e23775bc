package collation

import "strings"

// locales are the locale IDs MongoDB accepts, as ICU names them (the
// manual's "Collation Locales and Default Parameters",
// https://www.mongodb.com/docs/v7.0/reference/collation-locales-defaults/),
// each with the collation variants it has (the part after "@collation=").
var locales = map[string][]string{
	"af": nil, "sq": nil, "am": nil, "ar": {"compat"}, "hy": nil, "as": nil,
	"az": {"search"}, "bn": {"traditional"}, "be": nil, "bs": {"search"},
	"bs_Cyrl": nil, "bg": nil, "my": nil, "ca": {"search"}, "chr": nil,
	"zh": {"big5han", "gb2312han", "unihan", "zhuyin"}, "zh_Hant": nil,
	"hr": {"search"}, "cs": {"search"}, "da": {"search"}, "nl": nil, "dz": nil,
	"en": nil, "en_US": nil, "en_US_POSIX": nil, "eo": nil, "et": nil, "ee": nil,
	"fo": nil, "fil": nil, "fi": {"search", "traditional"}, "fr": nil, "fr_CA": nil,
	"gl": {"search"}, "ka": nil, "de": {"search", "eor", "phonebook"},
	"de_AT": {"phonebook"}, "el": nil, "gu": nil, "ha": nil, "haw": nil,
	"he": nil, "hi": nil, "hu": nil, "is": {"search"}, "ig": nil,
	"smn": {"search"}, "id": nil, "ga": nil, "it": nil, "ja": nil,
	"kl": {"search"}, "kn": {"traditional"}, "kk": nil, "km": nil, "kok": nil,
	"ko": {"search", "searchjl"}, "ky": nil, "lkt": nil, "lo": nil, "lv": nil,
	"lt": nil, "dsb": nil, "lb": nil, "mk": nil, "ms": nil, "ml": nil, "mt": nil,
	"mr": nil, "mn": nil, "ne": nil, "se": {"search"}, "nb": {"search"},
	"nn": {"search"}, "or": nil, "om": nil, "ps": nil, "fa": nil, "fa_AF": nil,
	"pl": nil, "pt": nil, "pa": nil, "ro": nil, "ru": nil, "sr": nil,
	"sr_Latn": {"search"}, "si": {"dictionary"}, "sk": {"search"}, "sl": nil,
	"es": {"search", "traditional"}, "sw": nil, "sv": {"search"}, "ta": nil,
	"te": nil, "th": nil, "bo": nil, "to": nil, "tr": {"search"}, "uk": nil,
	"hsb": nil, "ur": nil, "ug": nil, "vi": {"traditional"}, "wae": nil,
	"cy": nil, "yi": {"search"}, "yo": nil, "zu": nil,
}

// bcp47Variants are the BCP 47 names (-u-co-) of ICU's collation variants
// where they differ.
var bcp47Variants = map[string]string{
	"phonebook": "phonebk", "traditional": "trad", "dictionary": "dict",
	"gb2312han": "gb2312", "big5han": "big5han",
}

// localeDefaults are the locales whose collations do not have ICU's root
// defaults (the manual's table of default parameters): French Canadian
// orders accents backwards, Danish and Maltese put upper case first, Thai
// ignores punctuation.
var localeDefaults = map[string]func(*Spec){
	"fr_CA": func(s *Spec) { s.Backwards = true },
	"da":    func(s *Spec) { s.CaseFirst = "upper" },
	"mt":    func(s *Spec) { s.CaseFirst = "upper" },
	"th":    func(s *Spec) { s.Alternate = "shifted" },
}

// resolveLocale checks an ICU locale ID, as in "de@collation=phonebook",
// and returns its BCP 47 tag. suggestion is a valid ID the caller may have
// meant, for the error's "Did you mean", or "".
func resolveLocale(id string) (tag string, ok bool, suggestion string) {
	base, variant, hasVariant := strings.Cut(id, "@collation=")
	variants, known := locales[base]
	if !known {
		for k := range locales {
			if strings.EqualFold(k, base) {
				return "", false, k
			}
		}
		return "", false, ""
	}
	tag = strings.ReplaceAll(base, "_", "-")
	if base == "en_US_POSIX" {
		tag = "en-US-u-va-posix"
	}
	if hasVariant {
		found := false
		for _, v := range variants {
			found = found || v == variant
		}
		if !found {
			return "", false, base
		}
		co := variant
		if b, ok := bcp47Variants[variant]; ok {
			co = b
		}
		if strings.Contains(tag, "-u-") {
			tag += "-co-" + co
		} else {
			tag += "-u-co-" + co
		}
	}
	return tag, true, ""
}
