package account

import "testing"

func TestPasswordHashRoundTrip(t *testing.T) {
	t.Parallel()
	p := HashParams{MemoryKiB: 1024, Time: 1, Threads: 1}
	h, err := hashPassword("correct horse", p)
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := hashPassword("correct horse", p)
	if h == h2 {
		t.Fatal("two hashes of one password are equal: salt not random")
	}
	for _, tc := range []struct {
		pw   string
		want bool
	}{{"correct horse", true}, {"correct horse ", false}, {"", false}} {
		ok, err := checkPassword(h, tc.pw)
		if err != nil || ok != tc.want {
			t.Errorf("checkPassword(%q) = %v, %v; want %v", tc.pw, ok, err, tc.want)
		}
	}
	for _, bad := range []string{"", "$argon2id$v=19$m=1,t=1,p=1$$", "$bcrypt$x$y$z$w", "$argon2id$v=18$m=1,t=1,p=1$AA$AA"} {
		if _, err := checkPassword(bad, "x"); err == nil {
			t.Errorf("checkPassword(%q) accepted a malformed hash", bad)
		}
	}
}
