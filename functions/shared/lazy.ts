/**
 * Things a Lambda container builds once, on first use: a handler's middy
 * chain, the Runtime, an adapter and its SDK client. The build starts on the
 * first call; concurrent calls share it; a failed build is not kept, so the
 * next call (the next invocation) builds again, and the failure shows on
 * every invocation's logs rather than only the first.
 */

/**
 * Memoises an async build. The arguments of the call that starts a build are
 * handed to it; later calls share its result and their arguments are ignored.
 */
export function once<T, A extends unknown[] = []>(build: (...args: A) => Promise<T>): (...args: A) => Promise<T> {
  let pending: Promise<T> | undefined;
  return (...args) => {
    if (pending === undefined) {
      const attempt = build(...args).catch((err: unknown) => {
        if (pending === attempt) pending = undefined;
        throw err;
      });
      pending = attempt;
    }
    return pending;
  };
}

/** A handler whose implementation is built on its first invocation (see {@link once}). */
export function lazyHandler<E, C, R>(build: () => Promise<(event: E, context: C) => Promise<R>>): (event: E, context: C) => Promise<R> {
  const built = once(build);
  return async (event, context) => (await built())(event, context);
}
