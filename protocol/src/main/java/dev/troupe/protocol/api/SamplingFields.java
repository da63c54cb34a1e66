package dev.troupe.protocol.api;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Map;

/**
 * The sampling fields a generation request shares between {@code /v1/chat/completions} and {@code
 * /v1/completions}, exactly as the client sent them (null: absent), so that one mapper turns both
 * into the engine's sampling parameters. A field one of the APIs lacks answers null there. The
 * token budget is read by each API's mapper (their fields and defaults differ).
 */
public interface SamplingFields {
  Integer n();

  Double temperature();

  Double topP();

  Integer topK();

  Double minP();

  Double presencePenalty();

  Double frequencyPenalty();

  Double repetitionPenalty();

  Boolean useBeamSearch();

  Double lengthPenalty();

  Integer minTokens();

  JsonNode stop();

  List<Integer> stopTokenIds();

  Boolean includeStopStrInOutput();

  Boolean ignoreEos();

  Boolean skipSpecialTokens();

  Boolean spacesBetweenSpecialTokens();

  Map<String, Double> logitBias();

  List<Integer> allowedTokenIds();

  /** Chat only. */
  default List<String> badWords() {
    return null;
  }

  List<JsonNode> logitsProcessors();

  Map<String, Object> engineXargs();
}
