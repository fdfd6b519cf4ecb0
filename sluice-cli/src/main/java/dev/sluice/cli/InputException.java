package dev.sluice.cli;

/** Bad input (a spec, a CSV line, an option value): the message says where and what was expected. */
final class InputException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  InputException(String message) {
    super(message);
  }
}
