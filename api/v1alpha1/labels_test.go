package v1alpha1

import "testing"

func TestIndexLabel(t *testing.T) {
	for _, c := range []struct {
		value string
		set   bool
		want  int32
		ok    bool
	}{
		{"0", true, 0, true},
		{"17", true, 17, true},
		{"", false, 0, false},
		{"", true, 0, false},
		{"-1", true, 0, false},
		{"1e3", true, 0, false},
		{"2147483648", true, 0, false},
		{"web-3", true, 0, false},
	} {
		labels := map[string]string{}
		if c.set {
			labels[LabelPodIndex] = c.value
		}
		got, ok := IndexLabel(labels, LabelPodIndex)
		if got != c.want || ok != c.ok {
			t.Errorf("IndexLabel(%q) = %d, %v; want %d, %v", c.value, got, ok, c.want, c.ok)
		}
	}
}
