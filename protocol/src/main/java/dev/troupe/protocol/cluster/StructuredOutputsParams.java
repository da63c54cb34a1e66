package dev.troupe.protocol.cluster;

import dev.troupe.protocol.CborSerializable;
import java.util.List;

/**
 * One structured-output constraint of a request, engine-side (vLLM's {@code
 * StructuredOutputsParams} after the request mapper picked the single kind): the worker compiles it
 * to a token-level grammar and masks every generated token with it.
 *
 * @param kind which constraint
 * @param spec the schema JSON text ({@code JSON}), the pattern ({@code REGEX}), the grammar text
 *     ({@code GRAMMAR}) or the structural-tag JSON ({@code STRUCTURAL_TAG}); null for {@code
 *     CHOICE} and {@code JSON_OBJECT}
 * @param choices the literal alternatives of {@code CHOICE}, else null
 * @param disableAnyWhitespace JSON without free whitespace (xgrammar's compact separators)
 * @param disableAdditionalProperties objects without {@code additionalProperties} are closed
 * @param whitespacePattern a regex for the whitespace JSON allows between tokens, or null
 * @param param the request field to name in a 400 (e.g. {@code structured_outputs.json}, {@code
 *     response_format}, {@code tool_choice}); not part of the constraint's identity
 */
public record StructuredOutputsParams(
    Kind kind,
    String spec,
    List<String> choices,
    boolean disableAnyWhitespace,
    boolean disableAdditionalProperties,
    String whitespacePattern,
    String param)
    implements CborSerializable {

  /** The constraint kinds of vLLM's {@code structured_outputs}. */
  public enum Kind {
    JSON,
    REGEX,
    CHOICE,
    GRAMMAR,
    JSON_OBJECT,
    STRUCTURAL_TAG
  }

  public StructuredOutputsParams {
    if (kind == null) throw new IllegalArgumentException("kind is required");
    if (param == null || param.isEmpty()) throw new IllegalArgumentException("param is required");
    choices = choices == null ? null : List.copyOf(choices);
    boolean needsSpec = kind != Kind.CHOICE && kind != Kind.JSON_OBJECT;
    if (needsSpec && spec == null) throw new IllegalArgumentException(kind + " needs a spec");
    if (kind == Kind.CHOICE && choices == null)
      throw new IllegalArgumentException("CHOICE needs choices");
  }

  public static StructuredOutputsParams json(String schema, String param) {
    return new StructuredOutputsParams(Kind.JSON, schema, null, false, false, null, param);
  }

  public static StructuredOutputsParams regex(String pattern, String param) {
    return new StructuredOutputsParams(Kind.REGEX, pattern, null, false, false, null, param);
  }

  public static StructuredOutputsParams choice(List<String> choices, String param) {
    return new StructuredOutputsParams(Kind.CHOICE, null, choices, false, false, null, param);
  }

  public static StructuredOutputsParams grammar(String grammar, String param) {
    return new StructuredOutputsParams(Kind.GRAMMAR, grammar, null, false, false, null, param);
  }

  public static StructuredOutputsParams jsonObject(String param) {
    return new StructuredOutputsParams(Kind.JSON_OBJECT, null, null, false, false, null, param);
  }

  public static StructuredOutputsParams structuralTag(String json, String param) {
    return new StructuredOutputsParams(Kind.STRUCTURAL_TAG, json, null, false, false, null, param);
  }

  /** The same constraint with the JSON options set. */
  public StructuredOutputsParams withJsonOptions(
      boolean disableAnyWhitespace, boolean disableAdditionalProperties, String whitespacePattern) {
    return new StructuredOutputsParams(
        kind,
        spec,
        choices,
        disableAnyWhitespace,
        disableAdditionalProperties,
        whitespacePattern,
        param);
  }

  /** Everything but {@link #param}: two requests with equal keys share a compiled grammar. */
  public Object cacheKey() {
    return List.of(
        kind,
        spec == null ? "" : spec,
        choices == null ? List.of() : choices,
        disableAnyWhitespace,
        disableAdditionalProperties,
        whitespacePattern == null ? "" : whitespacePattern);
  }
}
