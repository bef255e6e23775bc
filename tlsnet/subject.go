package tlsnet

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
	"net"
	"strings"
)

// PeerSubject is the subject of the client certificate c's TLS handshake
// verified, in the RFC 2253 form MongoDB names MONGODB-X509 users by; false
// when c is not TLS, its handshake has not completed or the client presented
// no certificate. c is a connection Listener accepted or a *tls.Conn.
func PeerSubject(c net.Conn) (string, bool) {
	var tc *tls.Conn
	switch c := c.(type) {
	case *Conn:
		tc = c.secured.Load()
	case *tls.Conn:
		tc = c
	}
	if tc == nil {
		return "", false
	}
	st := tc.ConnectionState()
	if !st.HandshakeComplete || len(st.VerifiedChains) == 0 || len(st.PeerCertificates) == 0 {
		return "", false
	}
	s, err := Subject(st.PeerCertificates[0])
	if err != nil {
		return "", false
	}
	return s, true
}

// Subject is cert's subject as MongoDB prints it (RFC 2253): the relative
// distinguished names last first, as "CN=client,OU=...,O=...,L=...,ST=...,C=..."
// for a subject encoded from C to CN, the attributes of one name joined by
// "+", each with OpenSSL's short name for its type. pkix.Name.String is
// close but not the same: it rebuilds the name in a fixed order rather than
// the certificate's, and spells some types differently (SERIALNUMBER for
// serialNumber, an OID for emailAddress or DC).
func Subject(cert *x509.Certificate) (string, error) {
	var rdns pkix.RDNSequence
	if rest, err := asn1.Unmarshal(cert.RawSubject, &rdns); err != nil {
		return "", fmt.Errorf("tls: parse certificate subject: %w", err)
	} else if len(rest) > 0 {
		return "", fmt.Errorf("tls: trailing data after certificate subject")
	}
	var b strings.Builder
	for i := len(rdns) - 1; i >= 0; i-- {
		if i < len(rdns)-1 {
			b.WriteByte(',')
		}
		for j, atv := range rdns[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			b.WriteString(shortName(atv.Type))
			b.WriteByte('=')
			v, ok := atv.Value.(string)
			if !ok {
				v = fmt.Sprint(atv.Value)
			}
			escapeValue(&b, v)
		}
	}
	return b.String(), nil
}

// shortNames are OpenSSL's short names for the attribute types subjects
// commonly hold, which MongoDB prints; other types print as their OID.
var shortNames = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.4":                    "SN",
	"2.5.4.5":                    "serialNumber",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.9":                    "street",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.12":                   "title",
	"2.5.4.17":                   "postalCode",
	"2.5.4.42":                   "GN",
	"0.9.2342.19200300.100.1.1":  "UID",
	"0.9.2342.19200300.100.1.25": "DC",
	"1.2.840.113549.1.9.1":       "emailAddress",
}

func shortName(oid asn1.ObjectIdentifier) string {
	s := oid.String()
	if n, ok := shortNames[s]; ok {
		return n
	}
	return s
}

// escapeValue writes v escaped as RFC 2253 section 2.4 asks: a backslash
// before , + " \ < > ; and before a leading space or # and a trailing
// space; control characters as \XX.
func escapeValue(b *strings.Builder, v string) {
	for i := 0; i < len(v); i++ {
		ch := v[i]
		switch {
		case strings.IndexByte(",+\"\\<>;", ch) >= 0,
			i == 0 && (ch == ' ' || ch == '#'),
			i == len(v)-1 && ch == ' ':
			b.WriteByte('\\')
			b.WriteByte(ch)
		case ch < 0x20 || ch == 0x7f:
			fmt.Fprintf(b, "\\%02X", ch)
		default:
			b.WriteByte(ch)
		}
	}
}
