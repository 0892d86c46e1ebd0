// One chat completion: a prompt in, the first choice's text out.

package main

import (
	"context"

	"github.com/openai/openai-go/v3"
)

// Ask sends one chat completion and returns the first choice's text.
func (c *client) Ask(ctx context.Context, model, prompt string) (string, error) {
	resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
	})
	if err != nil {
		return "", err
	}
	if len(resp.Choices) == 0 {
		return "", nil
	}
	return resp.Choices[0].Message.Content, nil
}
