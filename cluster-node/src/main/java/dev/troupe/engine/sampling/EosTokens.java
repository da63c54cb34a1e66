package dev.troupe.engine.sampling;

import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * A model's end-of-sequence ids, split the way vLLM treats them.
 *
 * @param eosTokenId the tokenizer's {@code eos_token_id} (-1 when it has none): ends a choice with
 *     {@code finish_reason "stop"} and a null {@code stop_reason}, unless {@code ignore_eos}
 * @param generationEosIds further EOS ids from {@code generation_config.json}/{@code config.json}
 *     (the tokenizer's id removed): vLLM merges them into {@code stop_token_ids} unless {@code
 *     ignore_eos}, so they end a choice with {@code stop_reason} = the id
 */
public record EosTokens(int eosTokenId, Set<Integer> generationEosIds) {
  public EosTokens {
    Set<Integer> extra =
        new LinkedHashSet<>(generationEosIds == null ? Set.of() : generationEosIds);
    extra.remove(eosTokenId);
    generationEosIds = Set.copyOf(extra);
  }

  /**
   * The tokenizer's EOS id plus the model config's EOS ids (the tokenizer's own is dropped from
   * those).
   */
  public static EosTokens of(int eosTokenId, Collection<Integer> generationEosIds) {
    return new EosTokens(eosTokenId, Set.copyOf(generationEosIds));
  }

  public static EosTokens none() {
    return new EosTokens(-1, Set.of());
  }

  public boolean isEos(int token) {
    return token >= 0 && token == eosTokenId;
  }
}
