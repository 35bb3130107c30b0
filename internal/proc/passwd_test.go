package proc

import (
	"reflect"
	"testing"
)

func TestParsePasswd(t *testing.T) {
	in := "root:x:0:0:root:/root:/bin/bash\n# comment\nbroken\nnobody:x:65534:65534::/:/usr/sbin/nologin\ntoor:x:0:0::/:/bin/sh\nodd:x:abc:0::/:\n"
	want := map[int]string{0: "root", 65534: "nobody"}
	if got := parsePasswd([]byte(in)); !reflect.DeepEqual(got, want) {
		t.Errorf("parsePasswd = %v, want %v", got, want)
	}
}
