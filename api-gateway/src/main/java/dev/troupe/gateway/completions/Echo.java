package dev.troupe.gateway.completions;

/**
 * What echoing a prompt needs beyond what the worker streams: the prompt's text (as sent; decoded
 * when it was token ids; {@code ""} with {@code return_token_ids}, as vLLM) and the text of its
 * first token, which has no logprob entry to carry it.
 *
 * @param promptText written before each choice's text, or null without {@code echo}
 * @param firstToken the first prompt token's text in echoed logprobs, or null when not needed
 */
record Echo(String promptText, String firstToken) {
  static final Echo NONE = new Echo(null, null);
}
