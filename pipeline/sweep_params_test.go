package pipeline

import (
	"reflect"
	"strings"
	"testing"
)

// TestApplyParamsCoversEveryHyperparameter sets every JSON field of
// Hyperparameters through ApplyParams (a hand-written switch, so that
// workflows may call it) and checks the field changed: a field added to the
// struct without a case in the switch fails here.
func TestApplyParamsCoversEveryHyperparameter(t *testing.T) {
	typ := reflect.TypeOf(Hyperparameters{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		p := ParamValue{Name: name, Value: 7}
		if f.Type.Kind() == reflect.String {
			p = ParamValue{Name: name, Text: DescriptorTriangle}
		}
		h, err := ApplyParams(Hyperparameters{}, []ParamValue{p})
		if err != nil {
			t.Errorf("field %d (%s): %v", i, name, err)
			continue
		}
		if reflect.ValueOf(h).Field(i).IsZero() {
			t.Errorf("field %d (%s): ApplyParams left it unset", i, name)
		}
	}
}
