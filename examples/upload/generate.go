package main

import (
	"bytes"
	"context"
	"hash/fnv"
	"image"
	"image/color"
	"image/png"
)

// placeholder stands in for an image model: it draws a small gradient
// whose colours depend on the tenant and job, and encodes it as PNG.
func placeholder(_ context.Context, tenant, job string) ([]byte, error) {
	h := fnv.New32a()
	h.Write([]byte(tenant + "/" + job))
	seed := h.Sum32()
	const size = 64
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	for y := range size {
		for x := range size {
			img.Set(x, y, color.RGBA{uint8(seed) + uint8(x*4), uint8(seed>>8) + uint8(y*4), uint8(seed >> 16), 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
