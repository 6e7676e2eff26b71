/**
 * A text of about `tokens` tokens: the tag (unique per request, so nothing downstream can
 * answer from a cache) and then "hello" repeated, one WordPiece token each for the BERT
 * tokenizers; two more are [CLS] and [SEP].
 */
export function textOfTokens(tokens: number, tag: string): string {
  return `${tag} ${"hello ".repeat(Math.max(0, tokens - 3))}`.trim();
}
