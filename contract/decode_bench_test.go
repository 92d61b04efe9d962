package contract

import "testing"

// The hot-path decoders against the json.Unmarshal decoding they replaced
// (refDecode…), on records of the sizes the pipeline carries:
//
//	go test -run '^$' -bench Decode -benchmem ./contract
func BenchmarkDecode(b *testing.B) {
	ad := []byte(`{"v":1,"id":"e123456","type":"impression","campaign":"camp-001234","advertiser":"adv-77","price_micros":1000,"ts":"2026-11-30T10:00:01.123456789Z"}`)
	spend := []byte(`{"v":1,"id":"camp-001234/1796032800000","campaign":"camp-001234","advertiser":"adv-77","spend_micros":5000,"events":5,"window_start":"2026-11-30T10:00:00Z","window_end":"2026-11-30T10:00:10Z","due_at":"2026-11-30T10:00:15Z","emitted_at":"2026-11-30T10:00:16.123456789Z"}`)
	for _, c := range []struct {
		name string
		fn   func() error
	}{
		{"AdEvent/scanner", func() error { _, err := DecodeAdEvent(ad); return err }},
		{"AdEvent/reflection", func() error { _, err := refDecodeAdEvent(ad); return err }},
		{"SpendEvent/scanner", func() error { _, err := DecodeSpendEvent(spend); return err }},
		{"SpendEvent/reflection", func() error { _, err := refDecodeSpendEvent(spend); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.fn(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
