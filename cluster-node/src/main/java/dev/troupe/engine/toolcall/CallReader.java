package dev.troupe.engine.toolcall;

import java.util.Set;

/**
 * Reads one tool call object, {@code {"name": "...", "arguments": {...}}}, as its text arrives: the
 * name once its string is complete, and the arguments value re-spelled the way Python's {@code
 * json.dumps} prints it (see {@link PythonJsonWriter}), piece by piece. Other members are skipped.
 * A call is valid when the object is well-formed JSON with a string name and an arguments member.
 */
final class CallReader {

  private final Set<String> argumentKeys;
  private final PythonJsonWriter arguments = new PythonJsonWriter();
  private final JsonEvents events;
  private String name;
  private boolean sawArguments;
  private boolean nameIsString = true;

  CallReader(Set<String> argumentKeys) {
    this.argumentKeys = argumentKeys;
    this.events = new JsonEvents(new Router());
  }

  private CallReader(String name) {
    this.argumentKeys = Set.of();
    this.name = name;
    this.sawArguments = true;
    this.events = new JsonEvents(arguments);
  }

  /** A reader of the arguments value alone, for formats that write the name outside the JSON. */
  static CallReader bareArguments(String name) {
    return new CallReader(name);
  }

  void feed(CharSequence text) {
    events.feed(text);
  }

  void finish() {
    events.finish();
  }

  /** The object is complete (valid or not: see {@link #valid}). */
  boolean done() {
    return events.done();
  }

  /** The text cannot be a tool call any more. */
  boolean failed() {
    return events.failed() || (events.done() && !valid());
  }

  /** A complete object with a string name and arguments. */
  boolean valid() {
    return events.done() && name != null && nameIsString && sawArguments;
  }

  /** Offset just after the object in the text fed; -1 while not done. */
  int end() {
    return events.end();
  }

  /** The function name, once its string is complete. */
  String name() {
    return name;
  }

  /** Argument text written since the last call. */
  String drainArguments() {
    return arguments.drain();
  }

  String arguments() {
    return arguments.text();
  }

  /** Routes the events of the call object: depth 1 is the call's own members. */
  private final class Router implements JsonEvents.Listener {
    private int depth;
    private String member; // the depth-1 key being read
    private StringBuilder nameText;

    private boolean inArguments() {
      return member != null && argumentKeys.contains(member) && depth >= 1;
    }

    private void valueAtMember() {
      if (depth == 1 && member != null && argumentKeys.contains(member)) sawArguments = true;
    }

    @Override
    public void startObject() {
      if (depth >= 1) {
        valueAtMember();
        if (inArguments()) arguments.startObject();
        else if (depth == 1 && "name".equals(member)) nameIsString = false;
      }
      depth++;
    }

    @Override
    public void endObject() {
      depth--;
      if (depth >= 1 && inArguments()) arguments.endObject();
      if (depth == 1) member = null;
    }

    @Override
    public void startArray() {
      if (depth >= 1) {
        valueAtMember();
        if (inArguments()) arguments.startArray();
        else if (depth == 1 && "name".equals(member)) nameIsString = false;
      }
      depth++;
    }

    @Override
    public void endArray() {
      depth--;
      if (depth >= 1 && inArguments()) arguments.endArray();
      if (depth == 1) member = null;
    }

    @Override
    public void key(String key) {
      if (depth == 1) member = key;
      else if (inArguments()) arguments.key(key);
    }

    @Override
    public void stringStart() {
      valueAtMember();
      if (depth == 1 && "name".equals(member)) nameText = new StringBuilder();
      else if (inArguments()) arguments.stringStart();
    }

    @Override
    public void stringChars(String chars) {
      if (nameText != null) nameText.append(chars);
      else if (inArguments()) arguments.stringChars(chars);
    }

    @Override
    public void stringEnd() {
      if (nameText != null) {
        name = nameText.toString();
        nameText = null;
      } else if (inArguments()) {
        arguments.stringEnd();
      }
      if (depth == 1) member = null;
    }

    @Override
    public void number(String text) {
      valueAtMember();
      if (inArguments()) arguments.number(text);
      else if (depth == 1 && "name".equals(member)) nameIsString = false;
      if (depth == 1) member = null;
    }

    @Override
    public void literal(String text) {
      valueAtMember();
      if (inArguments()) arguments.literal(text);
      else if (depth == 1 && "name".equals(member)) nameIsString = false;
      if (depth == 1) member = null;
    }
  }
}
