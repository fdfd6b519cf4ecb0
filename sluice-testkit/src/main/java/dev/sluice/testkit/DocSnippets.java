package dev.sluice.testkit;

import java.io.File;
import java.io.IOException;
import java.io.StringWriter;
import java.lang.reflect.Method;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;

/**
 * The code blocks of a Markdown page, extracted so that tests can compile and run them as a reader
 * would paste them.
 *
 * <p>A Java block is either whole types (a class, a record, an interface, with their imports),
 * compiled as it is, or statements after their imports, compiled as the body of a method (or, if
 * they declare methods, as the members of a class). A line {@code ...} stands for code the reader
 * writes and is left out, and a method body {@code { ... }} throws. What a block uses but does not declare (the application's
 * {@code dataSource}, a servlet context) is declared in an HTML comment just before the block,
 * which Markdown does not show: {@code <!-- given: HikariDataSource dataSource = ...; -->}.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public final class DocSnippets {
  private static final Pattern BLOCK = Pattern.compile(
      "(?:<!-- given:(.*?)-->\\s*\\n)?^```(\\w+)\\n(.*?)^```", Pattern.MULTILINE | Pattern.DOTALL);
  private static final Pattern TYPE = Pattern.compile(
      "^(?:@\\w+(?:\\(.*\\))?\\s+)*(?:public |final |abstract )*(?:class|record|interface|enum) (\\w+)",
      Pattern.MULTILINE);
  /** A field declared without a value: {@code static Foo a, b;}. */
  private static final Pattern UNSET_FIELD =
      Pattern.compile("static [\\w.<>]+ \\w+(?:, \\w+)*;");
  private static final Pattern PLACEHOLDER = Pattern.compile("^\\s*(//\\s*)?\\.\\.\\.\\s*(//.*)?$");

  private DocSnippets() {}

  /**
   * A code block of a page.
   *
   * @param page the page
   * @param line the line of its opening fence (1-based)
   * @param language the fence's language
   * @param code the block's text
   * @param given declarations the page keeps out of sight (a {@code <!-- given: -->} comment), or ""
   */
  public record Snippet(Path page, int line, String language, String code, String given) {
    /** Where it is, as an editor opens it: {@code docs/spring.md:120}. */
    public String where() {
      return page.normalize() + ":" + line;
    }

    /**
     * Whether it can run as it stands: statements, and every value its hidden declarations give
     * is made there (a field declared without a value is only there to compile).
     */
    public boolean runnable() {
      return !declaresTypes() && !UNSET_FIELD.matcher(given).find();
    }

    /** Whether it is whole types, compiled as written (not wrapped in a method). */
    public boolean declaresTypes() {
      return TYPE.matcher(body()).find();
    }

    /** Its import lines. */
    public List<String> imports() {
      return code.lines().filter(l -> l.startsWith("import ")).toList();
    }

    /** Its code after the imports, less the placeholder lines. */
    public String body() {
      StringBuilder b = new StringBuilder();
      for (String l : code.lines().toList()) {
        if (!l.startsWith("import ") && !PLACEHOLDER.matcher(l).matches()) {
          b.append(l).append('\n');
        }
      }
      return b.toString();
    }

    @Override
    public String toString() {
      return where();
    }
  }

  /** The pages a user reads under the repository's {@code root}: the README, then docs/*.md by name. */
  public static List<Path> pages(Path root) {
    List<Path> pages = new ArrayList<>();
    pages.add(root.resolve("README.md"));
    try (Stream<Path> docs = Files.list(root.resolve("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
    } catch (IOException e) {
      throw new IllegalStateException("cannot list " + root.resolve("docs") + ": "
          + e.getMessage(), e);
    }
    return pages;
  }

  /** The blocks of {@code page} fenced as {@code language}, in order. */
  public static List<Snippet> blocks(Path page, String language) {
    String text;
    try {
      text = Files.readString(page);
    } catch (IOException e) {
      throw new IllegalStateException("cannot read " + page + ": " + e.getMessage(), e);
    }
    List<Snippet> out = new ArrayList<>();
    Matcher m = BLOCK.matcher(text);
    while (m.find()) {
      if (m.group(2).equals(language)) {
        int line = 1 + (int) text.substring(0, m.start(2)).chars().filter(c -> c == '\n').count();
        out.add(new Snippet(page, line, language, m.group(3),
            m.group(1) == null ? "" : m.group(1).strip()));
      }
    }
    return out;
  }

  /** What {@link #compile} made of the snippets: the class of each, in the same order. */
  public record Compiled(List<Snippet> snippets, List<String> classNames, Path classes) {
    /**
     * Runs a {@linkplain Snippet#runnable runnable} snippet's statements in a class loader
     * over the compiled classes and the caller's class path, failing with the snippet's place if it
     * throws or takes longer than {@code timeoutSeconds}.
     *
     * @return whether it ran (false for one that is not runnable)
     */
    public boolean run(Snippet snippet, long timeoutSeconds) throws Exception {
      int i = snippets.indexOf(snippet);
      if (i < 0 || !snippet.runnable()) {
        return false;
      }
      ClassLoader parent = DocSnippets.class.getClassLoader();
      try (URLClassLoader loader =
          new URLClassLoader(new URL[] {classes.toUri().toURL()}, parent)) {
        Method run;
        try {
          run = loader.loadClass(classNames.get(i)).getDeclaredMethod("run");
        } catch (NoSuchMethodException declarationsOnly) {
          return false;   // compiled as a class's members: nothing to run
        }
        run.setAccessible(true);
        ExecutorService one = Executors.newSingleThreadExecutor(r -> {
          Thread t = new Thread(r, "snippet " + snippet.where());
          t.setDaemon(true);
          return t;
        });
        try {
          Future<?> done = one.submit(() -> {
            run.invoke(null);
            return null;
          });
          done.get(timeoutSeconds, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
          Throwable cause = e.getCause().getCause() != null ? e.getCause().getCause() : e.getCause();
          throw new AssertionError(snippet.where() + " threw " + cause, cause);
        } catch (TimeoutException e) {
          throw new AssertionError(snippet.where() + " ran longer than " + timeoutSeconds + " s", e);
        } finally {
          one.shutdownNow();
        }
      }
      return true;
    }
  }

  /**
   * Compiles every snippet (Java) against this JVM's class path and module path into
   * {@code classes}, failing with each snippet that does not compile, its place and javac's
   * messages.
   */
  public static Compiled compile(List<Snippet> snippets, Path classes) {
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    if (javac == null) {
      throw new IllegalStateException("no Java compiler in this runtime: run the tests on a JDK");
    }
    // tests may run on the module path: its jars and directories are the snippets' class path
    String path = System.getProperty("jdk.module.path", "") + File.pathSeparator
        + System.getProperty("java.class.path");
    List<String> names = new ArrayList<>();
    List<String> failures = new ArrayList<>();
    for (int i = 0; i < snippets.size(); i++) {
      Snippet s = snippets.get(i);
      String name = "Snippet" + i + "_" + s.page().getFileName().toString()
          .replaceAll("\\W", "_").toLowerCase(Locale.ROOT) + "_" + s.line();
      List<String> attempts = new ArrayList<>();
      String compiledAs = null;
      for (String[] unit : units(s, name)) {
        String errors = compileOne(javac, path, classes, unit[0], unit[1]);
        if (errors == null) {
          compiledAs = unit[0];
          break;
        }
        attempts.add(errors);
      }
      if (compiledAs == null) {
        failures.add(s.where() + " does not compile:\n" + attempts.get(0));
      }
      names.add(compiledAs);
    }
    if (!failures.isEmpty()) {
      throw new AssertionError(failures.size() + " of " + snippets.size()
          + " snippets do not compile\n\n" + String.join("\n\n", failures));
    }
    return new Compiled(List.copyOf(snippets), names, classes);
  }

  /** The ways to read a snippet as a compilation unit: {class name, source}, in order of trial. */
  private static List<String[]> units(Snippet s, String name) {
    String imports = String.join("\n", s.imports()) + "\n";
    String body = s.body().replace("{ ... }", "{ throw new UnsupportedOperationException(); }");
    if (s.declaresTypes()) {
      Matcher t = TYPE.matcher(body);
      t.find();
      return List.<String[]>of(new String[] {t.group(1), imports + body + "\n" + s.given() + "\n"});
    }
    String head = imports + "@SuppressWarnings(\"unused\")\nfinal class " + name + " {\n"
        + (s.given().isEmpty() ? "" : "  " + s.given() + "\n");
    return List.of(
        new String[] {name, head + "  static void run() throws Exception {\n" + body + "\n  }\n}\n"},
        // statements that end by returning something, as a method's body does
        new String[] {name, head + "  static Object run() throws Exception {\n" + body
            + "\n  }\n}\n"},
        // statements that return early, as a method's body may, and then go on
        new String[] {name, head + "  static Object run() throws Exception {\n" + body
            + "\n    return null;\n  }\n}\n"},
        // declarations: fields and methods
        new String[] {name, head + body + "\n}\n"});
  }

  /** Null if {@code source} compiled, else javac's messages. */
  private static String compileOne(JavaCompiler javac, String path, Path classes, String name,
      String source) {
    JavaFileObject file = new SimpleJavaFileObject(URI.create("string:///" + name + ".java"),
        JavaFileObject.Kind.SOURCE) {
      @Override
      public CharSequence getCharContent(boolean ignoreEncodingErrors) {
        return source;
      }
    };
    DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
    StringWriter out = new StringWriter();
    boolean ok = javac.getTask(out, null, diagnostics,
        List.of("-d", classes.toString(), "-cp", path, "-proc:none", "-parameters"), null,
        List.of(file)).call();
    if (ok) {
      return null;
    }
    StringBuilder b = new StringBuilder();
    for (Diagnostic<? extends JavaFileObject> d : diagnostics.getDiagnostics()) {
      if (d.getKind() == Diagnostic.Kind.ERROR) {
        b.append("  line ").append(d.getLineNumber()).append(": ")
            .append(d.getMessage(Locale.ROOT)).append('\n');
      }
    }
    return b.append(out).append("  as compiled:\n").append(source.indent(4)).toString();
  }
}
