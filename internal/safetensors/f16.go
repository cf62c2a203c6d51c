package safetensors

import "github.com/x448/float16"

func f16ToF32(b uint16) float32 { return float16.Frombits(b).Float32() }
