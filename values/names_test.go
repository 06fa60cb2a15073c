package values

import (
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dir, name, key string
		order          int
		wantErr        bool
	}{
		{dir: "001-simple-module", order: 1, name: "simple-module", key: "simpleModule"},
		{dir: "simple-one-module", order: UnnumberedOrder, name: "simple-one-module", key: "simpleOneModule"},
		{dir: "020-cert-manager-v2", order: 20, name: "cert-manager-v2", key: "certManagerV2"},
		{dir: "005-mod-aa", order: 5, name: "mod-aa", key: "modAa"},
		{dir: "010-module-2fa", order: 10, name: "module-2fa", wantErr: true},
		{dir: "010-a--b", order: 10, name: "a--b", wantErr: true},
		{dir: "010-Upper", order: 10, name: "Upper", wantErr: true},
		{dir: "010-trailing-", order: 10, name: "trailing-", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			order, name, err := ParseModuleDir(tt.dir)
			if err != nil || order != tt.order || name != tt.name {
				t.Fatalf("ParseModuleDir = %d, %q, %v", order, name, err)
			}
			key, err := ModuleKey(name)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ModuleKey(%q) = %q, want error", name, key)
				}
				return
			}
			if err != nil || key != tt.key {
				t.Fatalf("ModuleKey(%q) = %q, %v; want %q", name, key, err, tt.key)
			}
			if back := ModuleName(key); back != name {
				t.Fatalf("ModuleName(%q) = %q", key, back)
			}
		})
	}
}

func TestDuplicateModuleKeys(t *testing.T) {
	t.Parallel()
	_, _, err := NewStore(Source{Modules: []ModuleSource{{Name: "foo"}, {Name: "foo"}}})
	if err == nil || !strings.Contains(err.Error(), `both map to values key "foo"`) {
		t.Fatalf("err = %v", err)
	}
}
