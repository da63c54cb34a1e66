package dev.troupe.deploy;

import dev.troupe.engine.ChatTemplate;
import dev.troupe.engine.template.JinjaTemplate;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;

/**
 * vLLM's {@code --chat-template}: the path of a Jinja file, or the template itself. As vLLM's
 * {@code load_chat_template}, a value that cannot be opened as a file is the template when it holds
 * one of {@code {}} or a newline, and an error otherwise (a mistyped path is not served as a
 * template). Unlike vLLM the template is compiled here, so a broken one stops the launcher instead
 * of failing every request.
 */
final class ChatTemplateFlag {
  private ChatTemplateFlag() {}

  /**
   * The template source {@code value} names or is.
   *
   * @throws IllegalArgumentException when it is neither a readable file nor a template, or does not
   *     compile
   */
  static String read(String value) {
    String source;
    try {
      source = Files.readString(Path.of(value));
    } catch (IOException | InvalidPathException e) {
      if (value.chars().noneMatch(c -> c == '{' || c == '}' || c == '\n'))
        throw new IllegalArgumentException(
            "--chat-template "
                + value
                + " looks like a file path, but it cannot be read ("
                + reason(e)
                + ")");
      source = value;
    }
    try {
      JinjaTemplate.compile(source);
    } catch (ChatTemplate.TemplateException e) {
      throw new IllegalArgumentException("--chat-template does not compile: " + e.getMessage());
    }
    return source;
  }

  private static String reason(Exception e) {
    if (e instanceof java.nio.file.NoSuchFileException) return "no such file";
    if (e instanceof java.nio.file.AccessDeniedException) return "permission denied";
    if (e instanceof java.nio.charset.CharacterCodingException) return "not UTF-8 text";
    return e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
  }
}
