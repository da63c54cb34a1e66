package dev.troupe.gateway.completions;

import dev.troupe.gateway.chat.ChatResponseFolder;
import dev.troupe.protocol.api.completions.CompletionLogprobs;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.LogprobEntry;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.TokenLogprob;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A completion's {@code logprobs} as vLLM writes them ({@code _create_completion_logprobs}): per
 * token its text, its logprob floored at -9999, the sampled (or prompt) token and then its
 * alternatives keyed by text, {@code k + 1} at most (a later token with the same text overwrites
 * the value, keeping the key's place, as a Python dict does), and its offset in the text: the
 * previous offset plus the previous token's length in code points (Python's {@code len}).
 */
final class LegacyLogprobs {
  private LegacyLogprobs() {}

  /**
   * @param tokenIds the tokens, in order
   * @param entries one per token; null for a prompt's first token (it has no logprob)
   * @param k the request's {@code logprobs}
   * @param initialOffset the first token's offset
   * @param unscored the text of a token without an entry
   */
  static CompletionLogprobs of(
      List<Integer> tokenIds,
      List<LogprobEntry> entries,
      int k,
      int initialOffset,
      String unscored) {
    int size = tokenIds.size();
    List<Integer> offsets = new ArrayList<>(size);
    List<Double> logprobs = new ArrayList<>(size);
    List<String> tokens = new ArrayList<>(size);
    List<Map<String, Double>> tops = new ArrayList<>(size);
    int offset = initialOffset;
    for (int i = 0; i < size; i++) {
      LogprobEntry e = i < entries.size() ? entries.get(i) : null;
      String token;
      if (e == null) {
        token = unscored == null ? "" : unscored;
        logprobs.add(null);
        tops.add(null);
      } else {
        token = e.chosen().token();
        logprobs.add(ChatResponseFolder.floor(e.chosen().logprob()));
        Map<String, Double> top = new LinkedHashMap<>();
        top.put(token, ChatResponseFolder.floor(e.chosen().logprob()));
        int items = 1;
        for (TokenLogprob t : e.top()) {
          if (items > k) break;
          if (t.tokenId() == e.chosen().tokenId()) continue;
          top.put(t.token(), ChatResponseFolder.floor(t.logprob()));
          items++;
        }
        tops.add(top);
      }
      offsets.add(offset);
      offset += token.codePointCount(0, token.length());
      tokens.add(token);
    }
    return new CompletionLogprobs(offsets, logprobs, tokens, tops);
  }
}
