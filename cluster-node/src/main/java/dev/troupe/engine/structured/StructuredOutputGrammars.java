package dev.troupe.engine.structured;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.troupe.engine.sampling.InvalidSamplingParamsException;
import dev.troupe.engine.structured.grammar.Expr;
import dev.troupe.engine.structured.grammar.Grammar;
import dev.troupe.engine.structured.grammar.GrammarException;
import dev.troupe.engine.structured.syntax.GbnfParser;
import dev.troupe.engine.structured.syntax.JsonSchemaConverter;
import dev.troupe.engine.structured.syntax.LarkParser;
import dev.troupe.engine.structured.syntax.RegexParser;
import dev.troupe.engine.structured.syntax.StructuralTags;
import dev.troupe.protocol.cluster.StructuredOutputsParams;
import java.util.ArrayList;
import java.util.List;

/**
 * A request's constraint → {@link Grammar}, with vLLM's 400 messages: every failure is an {@link
 * InvalidSamplingParamsException} naming the request field ({@link StructuredOutputsParams#param})
 * whose message starts with vLLM's text ("Failed to transform regex into a grammar: …", "Invalid
 * grammar specification." …) followed by what exactly is wrong.
 */
public final class StructuredOutputGrammars {

  private static final ObjectMapper JSON = new ObjectMapper();

  private StructuredOutputGrammars() {}

  /** With JSON whitespace bounded as by default ({@code DEFAULT_MAX_WHITESPACE} in a row). */
  public static Grammar of(StructuredOutputsParams p) {
    return of(p, JsonSchemaConverter.Options.DEFAULT_MAX_WHITESPACE);
  }

  /**
   * @param maxJsonWhitespace whitespace characters in a row that JSON constraints allow where the
   *     request sets neither {@code disable_any_whitespace} nor {@code whitespace_pattern} ({@code
   *     JsonSchemaConverter.Options.UNBOUNDED}: any number, as vLLM)
   */
  public static Grammar of(StructuredOutputsParams p, int maxJsonWhitespace) {
    JsonSchemaConverter.Options options =
        new JsonSchemaConverter.Options(
            !p.disableAnyWhitespace(),
            p.whitespacePattern(),
            p.disableAdditionalProperties(),
            maxJsonWhitespace);
    if (p.whitespacePattern() != null) {
      try {
        RegexParser.parse(p.whitespacePattern());
      } catch (GrammarException e) {
        throw new InvalidSamplingParamsException(
            "structured_outputs.whitespace_pattern",
            "Failed to transform the whitespace pattern into a grammar: " + e.getMessage());
      }
    }
    switch (p.kind()) {
      case JSON:
        {
          JsonNode schema;
          try {
            schema = JSON.readTree(p.spec());
          } catch (JsonProcessingException e) {
            throw invalid(p, "Invalid JSON grammar specification.", e.getOriginalMessage());
          }
          if (schema == null || schema.isMissingNode())
            throw invalid(p, "Invalid JSON grammar specification.", "the schema is empty");
          try {
            return JsonSchemaConverter.convert(schema, options);
          } catch (GrammarException e) {
            throw invalid(p, "Failed to transform json schema into a grammar:", e.getMessage());
          }
        }
      case JSON_OBJECT:
        return JsonSchemaConverter.anyObject(options);
      case REGEX:
        if (p.spec().indexOf('\0') >= 0)
          throw new InvalidSamplingParamsException(
              p.param(), "structured_outputs.regex must not contain a NUL character ('\\x00')");
        try {
          return Grammar.of(RegexParser.parse(p.spec()));
        } catch (GrammarException e) {
          throw invalid(p, "Failed to transform regex into a grammar:", e.getMessage());
        }
      case CHOICE:
        {
          if (p.choices().isEmpty())
            throw new InvalidSamplingParamsException(
                p.param(), "Choice '[]' cannot be an empty list");
          List<Expr> options2 = new ArrayList<>();
          for (String c : p.choices()) options2.add(Expr.literal(c));
          return Grammar.of(Expr.alt(options2));
        }
      case GRAMMAR:
        {
          if (p.spec().isBlank())
            throw new InvalidSamplingParamsException(
                p.param(), "structured_outputs.grammar cannot be an empty string");
          boolean lark = LarkParser.isLikelyLark(p.spec());
          try {
            return lark ? LarkParser.parse(p.spec()) : GbnfParser.parse(p.spec());
          } catch (GrammarException e) {
            throw invalid(
                p,
                lark
                    ? "Failed to convert the grammar from Lark to EBNF."
                    : "Invalid grammar specification.",
                e.getMessage());
          }
        }
      case STRUCTURAL_TAG:
        {
          try {
            return StructuralTags.parse(JSON.readTree(p.spec()), options);
          } catch (JsonProcessingException e) {
            throw invalid(p, "Invalid structural tag specification.", e.getOriginalMessage());
          } catch (GrammarException e) {
            throw invalid(p, "Invalid structural tag specification.", e.getMessage());
          }
        }
      default:
        throw new IllegalStateException("unknown kind " + p.kind());
    }
  }

  /** The message for a grammar that is valid but exceeds a bound at compile time. */
  static InvalidSamplingParamsException tooLarge(StructuredOutputsParams p, GrammarException e) {
    String prefix =
        switch (p.kind()) {
          case JSON, JSON_OBJECT -> "Failed to transform json schema into a grammar:";
          case REGEX -> "Failed to transform regex into a grammar:";
          case CHOICE -> "Failed to transform choices into a grammar:";
          case GRAMMAR -> "Invalid grammar specification.";
          case STRUCTURAL_TAG -> "Invalid structural tag specification.";
        };
    return invalid(p, prefix, e.getMessage());
  }

  private static InvalidSamplingParamsException invalid(
      StructuredOutputsParams p, String vllmText, String detail) {
    return new InvalidSamplingParamsException(p.param(), vllmText + " " + detail);
  }
}
