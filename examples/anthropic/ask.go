// One Messages API call: a prompt in, the reply's text out.

package main

import (
	"context"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
)

// Ask sends one message and returns the text blocks of the reply, joined.
func (c *client) Ask(ctx context.Context, model, prompt string) (string, error) {
	msg, err := c.Messages.New(ctx, anthropic.MessageNewParams{
		Model:     anthropic.Model(model),
		MaxTokens: 256,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
	})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, block := range msg.Content {
		if block.Type == "text" {
			b.WriteString(block.Text)
		}
	}
	return b.String(), nil
}
