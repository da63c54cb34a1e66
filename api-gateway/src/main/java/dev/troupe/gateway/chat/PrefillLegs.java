package dev.troupe.gateway.chat;

import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.KvTransfer;

/**
 * The prefill leg of a request the gateway splits into prefill and decode: what vLLM's proxy sends
 * its prefill instance ({@code kv_transfer_params: {do_remote_decode: true}}, {@code max_tokens:
 * 1}, {@code stream: false}, no {@code min_tokens}).
 */
final class PrefillLegs {
  private PrefillLegs() {}

  /**
   * {@code request} as a prefill leg with id {@code id}: the same prompt, adapter, salt and prompt
   * ids (the KV depends on them alone), one choice of one token, no logprobs, not streamed. Its
   * token is thrown away, so its constraint is dropped too (compiling it would only delay the leg;
   * the decode replica applies it to every token the client sees).
   */
  static GenerationRequest of(GenerationRequest request, String id) {
    return request.toBuilder()
        .requestId(id)
        .sampling(
            request.sampling().toBuilder()
                .n(1)
                .maxTokens(1)
                .minTokens(0)
                .logprobs(null)
                .promptLogprobs(null)
                .structuredOutputs(null)
                .build())
        .streamed(false)
        .returnTokenIds(false)
        .returnTokensAsTokenIds(false)
        .resume(null)
        .kvTransfer(new KvTransfer.RemoteDecode())
        .build();
  }
}
