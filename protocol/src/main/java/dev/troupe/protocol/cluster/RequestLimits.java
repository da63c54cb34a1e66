package dev.troupe.protocol.cluster;

/**
 * The bounds of every request-sized list and map a generation request may carry. vLLM has none
 * besides the body size; here each is bounded so that what one request costs (tokenizing its bad
 * words on the worker's input thread, matching its stop strings and biasing its logits at every
 * step of the shared batch, rendering its messages and tools) stays small against the others it
 * shares a replica with. Each limit is far above real use; over it is a 400 naming the field. The
 * gateway's mappers check the chat and completions fields, and {@link SamplingParams} checks its
 * own lists again (a worker trusts no sender). Documented in docs/api.md, "Limits".
 */
public final class RequestLimits {
  private RequestLimits() {}

  /** {@code messages} of one chat (an agent's long trajectory included). */
  public static final int MESSAGES = 10_000;

  /** Content parts of one message. */
  public static final int CONTENT_PARTS = 1_000;

  /** {@code tools} (OpenAI accepts 128). */
  public static final int TOOLS = 1_000;

  /** {@code documents} for retrieval-augmented templates. */
  public static final int DOCUMENTS = 1_000;

  /** {@code stop} strings (OpenAI accepts 4). */
  public static final int STOP = 128;

  /**
   * Characters of all {@code stop} strings together: the text held back for a possible match is
   * recomputed at every step, quadratic in a stop string's length at worst.
   */
  public static final int STOP_CHARS = 4_096;

  /** {@code stop_token_ids}. */
  public static final int STOP_TOKEN_IDS = 1_024;

  /** {@code bad_words}: each is tokenized twice, and every step checks each against the output. */
  public static final int BAD_WORDS = 1_024;

  /** Characters of all {@code bad_words} together. */
  public static final int BAD_WORDS_CHARS = 65_536;

  /** {@code logit_bias} entries, applied at every step. */
  public static final int LOGIT_BIAS = 4_096;

  /** {@code allowed_token_ids}: up to a whole vocabulary (the largest served have ~256k). */
  public static final int ALLOWED_TOKEN_IDS = 262_144;

  /** {@code logits_processors}, each constructed for each choice. */
  public static final int LOGITS_PROCESSORS = 64;

  /** {@code engine_xargs} entries. */
  public static final int ENGINE_XARGS = 256;

  /**
   * {@code prompt}s of one {@code /v1/completions} request: each is its own generation (routed,
   * owned and answered by the gateway on its own). The same bound as {@code n} × prompts (vLLM's
   * {@code VLLM_MAX_N_SEQUENCES}), counted before the prompts are read.
   */
  public static final int PROMPTS = 16_384;

  /**
   * Token ids of one token-id {@code prompt} of {@code /v1/completions}: above any served context
   * (the worker refuses a longer prompt unless {@code truncate_prompt_tokens} cuts it), so that the
   * gateway does not copy, hash for routing and send on a prompt no model can take.
   */
  public static final int PROMPT_TOKEN_IDS = 1 << 20;

  /** {@code tokens} of one {@code /detokenize}. */
  public static final int DETOKENIZE_TOKENS = 1 << 20;

  /**
   * The message of a list or map over its limit.
   *
   * @param field the request field, as the client named it
   */
  public static String tooMany(String field, long size, int limit, String unit) {
    return "`"
        + field
        + "` has "
        + size
        + " "
        + unit
        + "; at most "
        + limit
        + " are accepted (docs/api.md, \"Limits\").";
  }
}
