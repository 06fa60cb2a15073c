package main

import (
	"testing"

	"github.com/addonops/addon-operator/lifecycle"
)

func TestLimitSettings(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"", 0, false}, {"16Mi", 16 << 20, false}, {"20000", 20000, false}, {"-1", -1, false},
		{"0", 0, true}, {"-5", 0, true}, {"lots", 0, true},
	} {
		got, err := parseSize(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Errorf("parseSize(%q) = %d, %v", tc.in, got, err)
		}
	}
	for _, tc := range []struct {
		in   string
		want int
		bad  bool
	}{
		{"", lifecycle.PurgeHalf, false}, {"half", lifecycle.PurgeHalf, false}, {"0", lifecycle.PurgeNone, false},
		{"3", 3, false}, {"-1", 0, true}, {"many", 0, true},
	} {
		got, err := parsePurgeLimit(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Errorf("parsePurgeLimit(%q) = %d, %v", tc.in, got, err)
		}
	}
}
