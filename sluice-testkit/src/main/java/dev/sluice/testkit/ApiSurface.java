package dev.sluice.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Member;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A library module's public API as a sorted text listing (every public type of its exported
 * packages, and their public and protected members with generic signatures), compared with the
 * listing checked in beside the module's tests. A change to the API then shows in review as a
 * change to that file: a visible decision, not an accident.
 *
 * <p>When the listing differs, the test fails with both; run it with
 * {@code -Dsluice.api.update=true} to write the new listing, and commit it.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public final class ApiSurface {
  private ApiSurface() {}

  /**
   * Checks the API of the classes in the jar or directory that holds {@code anyClassOfIt}, less
   * the packages named in {@code internal}, against {@code listing}; and that no public member
   * names a type of those packages.
   */
  public static void check(Class<?> anyClassOfIt, Path listing, String... internal) {
    List<String> now = listing(anyClassOfIt, internal);
    for (String pkg : internal) {
      Pattern typeOfIt = Pattern.compile("(?<![\\w.])" + Pattern.quote(pkg) + "\\.\\p{Lu}");
      assertThat(now).as("public members that name a type of " + pkg + ", which is not API:"
          + " a user could not call them (its package is exported to Sluice's modules only)")
          .noneMatch(line -> typeOfIt.matcher(line).find());
    }
    String text = String.join("\n", now) + "\n";
    if (Boolean.getBoolean("sluice.api.update")) {
      try {
        Files.createDirectories(listing.toAbsolutePath().getParent());
        Files.writeString(listing, text, StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return;
    }
    assertThat(listing).as("the checked-in API listing (write it with -Dsluice.api.update=true)")
        .exists();
    List<String> was;
    try {
      was = Files.readAllLines(listing, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    List<String> added = new ArrayList<>(now);
    added.removeAll(was);
    List<String> removed = new ArrayList<>(was);
    removed.removeAll(now);
    assertThat(Map.of("added", added, "removed", removed))
        .as("the public API of " + anyClassOfIt.getPackageName() + "'s module changed; if that is"
            + " meant, run the test with -Dsluice.api.update=true and commit " + listing)
        .isEqualTo(Map.of("added", List.of(), "removed", List.of()));
  }

  /** The listing of the classes beside {@code anyClassOfIt}. */
  public static List<String> listing(Class<?> anyClassOfIt, String... internal) {
    TreeSet<String> lines = new TreeSet<>();
    for (String name : classNames(anyClassOfIt)) {
      Class<?> c;
      try {
        c = Class.forName(name, false, anyClassOfIt.getClassLoader());
      } catch (ClassNotFoundException | LinkageError e) {
        continue;
      }
      if (!isPublic(c) || isInternal(c, internal)) {
        continue;
      }
      String type = describe(c);
      lines.add(type);
      for (Constructor<?> k : c.getDeclaredConstructors()) {
        if (visible(k) && !k.isSynthetic()) {
          lines.add(type + " :: " + k.toGenericString().replace(c.getName() + "(", "<init>("));
        }
      }
      for (Method m : c.getDeclaredMethods()) {
        if (visible(m) && !m.isSynthetic() && !m.isBridge()) {
          lines.add(type + " :: " + m.toGenericString());
        }
      }
      for (Field f : c.getDeclaredFields()) {
        if (visible(f) && !f.isSynthetic()) {
          lines.add(type + " :: " + f.toGenericString());
        }
      }
    }
    return new ArrayList<>(lines);
  }

  private static String describe(Class<?> c) {
    StringBuilder b = new StringBuilder(Modifier.toString(c.getModifiers()
        & ~Modifier.STATIC & ~Modifier.INTERFACE & ~Modifier.ABSTRACT));
    if (c.isSealed()) {
      b.append(" sealed");   // not a modifier bit: closed to users' subclasses all the same
    }
    if (c.isAnnotation()) {
      b.append(" @interface ");
    } else if (c.isInterface()) {
      b.append(" interface ");
    } else if (c.isEnum()) {
      b.append(" enum ");
    } else if (c.isRecord()) {
      b.append(" record ");
    } else {
      b.append(Modifier.isAbstract(c.getModifiers()) ? " abstract class " : " class ");
    }
    b.append(c.getName());
    if (c.getGenericSuperclass() != null && c.getSuperclass() != Object.class && !c.isEnum()
        && !c.isRecord()) {
      b.append(" extends ").append(c.getGenericSuperclass().getTypeName());
    }
    if (c.getGenericInterfaces().length > 0) {
      b.append(c.isInterface() ? " extends " : " implements ");
      List<String> names = new ArrayList<>();
      for (var t : c.getGenericInterfaces()) {
        names.add(t.getTypeName());
      }
      b.append(String.join(", ", names));
    }
    return b.toString().trim();
  }

  private static boolean isPublic(Class<?> c) {
    for (Class<?> k = c; k != null; k = k.getDeclaringClass()) {
      if (!Modifier.isPublic(k.getModifiers())) {
        return false;
      }
    }
    return !c.isAnonymousClass() && !c.isLocalClass() && !c.isSynthetic();
  }

  private static boolean isInternal(Class<?> c, String... internal) {
    for (String p : internal) {
      if (c.getPackageName().equals(p)) {
        return true;
      }
    }
    return false;
  }

  private static boolean visible(Member m) {
    int mod = m.getModifiers();
    return Modifier.isPublic(mod) || (Modifier.isProtected(mod)
        && !Modifier.isFinal(m.getDeclaringClass().getModifiers()));
  }

  /** The names of the classes in the jar or directory that holds {@code c}. */
  private static List<String> classNames(Class<?> c) {
    Path root;
    try {
      root = Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
    List<String> names = new ArrayList<>();
    try {
      if (Files.isDirectory(root)) {
        collect(root, names);
      } else {
        try (FileSystem jar = FileSystems.newFileSystem(root)) {
          collect(jar.getPath("/"), names);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return names;
  }

  private static void collect(Path root, List<String> names) throws IOException {
    try (Stream<Path> walk = Files.walk(root)) {
      walk.filter(f -> f.toString().endsWith(".class"))
          .map(f -> root.relativize(f).toString())
          .filter(n -> !n.equals("module-info.class") && !n.startsWith("META-INF"))
          .map(n -> n.substring(0, n.length() - ".class".length()).replace('/', '.'))
          .forEach(names::add);
    }
  }
}
