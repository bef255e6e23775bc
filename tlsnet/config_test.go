package tlsnet

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"strings"
	"testing"
)

func TestParseMode(t *testing.T) {
	for _, m := range []Mode{Disabled, Allow, Prefer, Require} {
		got, err := ParseMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m.String(), got, err)
		}
	}
	if _, err := ParseMode("requireTLS"); err == nil {
		t.Error("ParseMode accepted requireTLS")
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string // "" for valid
	}{
		{Config{}, ""},
		{Config{Mode: Require, CertFile: "c", KeyFile: "k"}, ""},
		{Config{Mode: Allow, CertFile: "c", KeyFile: "k", CAFile: "ca", AllowConnectionsWithoutCertificates: true}, ""},
		{Config{Mode: Require}, "needs a certificate file and a key file"},
		{Config{Mode: Prefer, KeyFile: "k"}, "needs a certificate file"},
		{Config{Mode: Allow, CertFile: "c"}, "needs a key file"},
		{Config{CertFile: "c", KeyFile: "k"}, "mode is disabled"},
		{Config{Mode: Require, CertFile: "c", KeyFile: "k", AllowConnectionsWithoutCertificates: true}, "without a CA file"},
	} {
		err := tc.cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.cfg, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want an error saying %q", tc.cfg, err, tc.want)
		}
	}
}

// TestSubject: the subject prints as MongoDB's x.509 documentation shows
// it, last name first, in the certificate's own order, with OpenSSL's short
// names and RFC 2253 escapes.
func TestSubject(t *testing.T) {
	oid := func(s ...int) asn1.ObjectIdentifier { return asn1.ObjectIdentifier(s) }
	atv := func(o asn1.ObjectIdentifier, v string) pkix.AttributeTypeAndValue {
		return pkix.AttributeTypeAndValue{Type: o, Value: v}
	}
	for _, tc := range []struct {
		rdns pkix.RDNSequence
		want string
	}{
		{clientSubject.ToRDNSequence(), clientSubjectString},
		// Encoded CN first: printed CN last, not reordered.
		{pkix.RDNSequence{{atv(oid(2, 5, 4, 3), "x")}, {atv(oid(2, 5, 4, 10), "o")}}, "O=o,CN=x"},
		{pkix.RDNSequence{
			{atv(oid(0, 9, 2342, 19200300, 100, 1, 25), "com")},
			{atv(oid(2, 5, 4, 11), "a"), atv(oid(0, 9, 2342, 19200300, 100, 1, 1), "u1")},
			{atv(oid(1, 2, 840, 113549, 1, 9, 1), "me@example.com")},
			{atv(oid(2, 5, 4, 3), " Smith, J+\"Q\" <x>; ")},
		}, `CN=\ Smith\, J\+\"Q\" \<x\>\;\ ,emailAddress=me@example.com,OU=a+UID=u1,DC=com`},
		{pkix.RDNSequence{{atv(oid(2, 5, 4, 3), "#1")}}, `CN=\#1`},
		{pkix.RDNSequence{{atv(oid(1, 2, 3), "v")}}, "1.2.3=v"},
	} {
		raw, err := asn1.Marshal(tc.rdns)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Subject(&x509.Certificate{RawSubject: raw})
		if err != nil || got != tc.want {
			t.Errorf("Subject = %q, %v; want %q", got, err, tc.want)
		}
	}
}
