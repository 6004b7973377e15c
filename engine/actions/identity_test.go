package actions

import "testing"

func TestParseIdentity(t *testing.T) {
	t.Parallel()
	good := map[string]Identity{
		"Lao Li <lao.li@example.com>":     {"Lao Li", "lao.li@example.com"},
		"  J. R. Smith <jr@example.com> ": {"J. R. Smith", "jr@example.com"},
		"李雷 <li@example.cn>":              {"李雷", "li@example.cn"},
		`"Quoted Name" <q@example.com>`:   {"Quoted Name", "q@example.com"},
	}
	for in, want := range good {
		got, err := ParseIdentity(in)
		if err != nil || got != want {
			t.Errorf("ParseIdentity(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "no email", "<only@email>", "Name <not-an-email>", "Name <a@b> trailing"} {
		if _, err := ParseIdentity(bad); err == nil {
			t.Errorf("ParseIdentity(%q) accepted", bad)
		}
	}
}
