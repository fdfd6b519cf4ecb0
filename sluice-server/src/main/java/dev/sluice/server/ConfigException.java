package dev.sluice.server;

import java.util.List;

/**
 * A configuration file that cannot be used; the message lists every problem as file:line: what.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/server.md#the-service">docs/server.md, "The service"</a>.
 */
public final class ConfigException extends Exception {
  private static final long serialVersionUID = 1L;
  private final List<String> problems;

  ConfigException(List<String> problems) {
    super(String.join("\n", problems));
    this.problems = List.copyOf(problems);
  }

  /** Each problem, as {@code file:line: what is wrong}. */
  public List<String> problems() {
    return problems;
  }
}
