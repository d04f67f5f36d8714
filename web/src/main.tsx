/** The ai4rag playground: Ask, Knowledge base and Experiments over `ai4rag serve`'s API. */
import './app.css';
import { type JSX, render } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import {
  ApiError,
  api,
  clearToken,
  patternChosen,
  type ServedPattern,
  servedPattern,
  setServedPattern,
  setToken,
  takeTokenFromFragment,
} from './api';
import { AskPage } from './ask';
import { ExperimentPage, ExperimentsPage } from './experiments';
import { KnowledgeBasePage } from './kb';
import type { ServerConfig } from './types';

function useRoute(): string {
  const [route, setRoute] = useState(window.location.hash || '#/ask');
  useEffect(() => {
    const on = () => setRoute(window.location.hash || '#/ask');
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

function TokenForm(props: { onToken: () => void; rejected: boolean }): JSX.Element {
  const [value, setValue] = useState('');
  return (
    <form
      class="token-form"
      onSubmit={(e) => {
        e.preventDefault();
        if (value.trim() === '') return;
        setToken(value.trim());
        props.onToken();
      }}
    >
      <h2>Sign in</h2>
      <p>
        Paste the token <code>ai4rag serve</code> printed (or open the <code>Web app:</code> address
        it printed, which carries the token).
      </p>
      {props.rejected && (
        <p class="error" role="alert">
          The server rejected that token.
        </p>
      )}
      <label for="token">API token</label>
      <input
        id="token"
        type="password"
        autoComplete="off"
        value={value}
        onInput={(e) => setValue(e.currentTarget.value)}
      />
      <button type="submit">Continue</button>
    </form>
  );
}

function App(): JSX.Element {
  const route = useRoute();
  const [hasToken, setHasToken] = useState(() => takeTokenFromFragment() !== undefined);
  const [rejected, setRejected] = useState(false);
  const [config, setConfig] = useState<ServerConfig | undefined>();
  const [pattern, setPattern] = useState<ServedPattern | undefined>(servedPattern);
  const [error, setError] = useState<string | undefined>();

  const loadConfig = useCallback(async () => {
    try {
      const c = await api<ServerConfig>('GET', '/config');
      setConfig(c);
      setError(undefined);
      // First run: an empty knowledge base and a finished experiment — answer with its best pattern.
      if (c.chunks === 0 && c.suggestion && !patternChosen()) {
        const p: ServedPattern = {
          experiment_id: c.suggestion.experiment_id,
          pattern_name: c.suggestion.pattern_name,
          collection: c.suggestion.collection,
          auto: true,
        };
        setServedPattern(p);
        setPattern(p);
      }
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) {
        clearToken();
        setRejected(true);
        setHasToken(false);
      } else setError((e as Error).message);
    }
  }, []);

  useEffect(() => {
    if (hasToken) void loadConfig();
  }, [hasToken, loadConfig]);

  const usePattern = (p: ServedPattern | null) => {
    setServedPattern(p);
    setPattern(p ?? undefined);
    if (p !== null) window.location.hash = '#/ask';
  };

  const nav = [
    ['#/ask', 'Ask'],
    ['#/kb', 'Knowledge base'],
    ['#/experiments', 'Experiments'],
  ] as const;
  const section = route.startsWith('#/experiments')
    ? '#/experiments'
    : route.startsWith('#/kb')
      ? '#/kb'
      : '#/ask';
  const experiment = /^#\/experiments\/(.+)$/.exec(route)?.[1];

  return (
    <>
      <button type="button" class="skip" onClick={() => document.getElementById('main')?.focus()}>
        Skip to content
      </button>
      <header class="top">
        <h1>ai4rag playground</h1>
        {hasToken && (
          <nav aria-label="sections">
            {nav.map(([href, label]) => (
              <a key={href} href={href} aria-current={section === href ? 'page' : undefined}>
                {label}
              </a>
            ))}
          </nav>
        )}
        {config && (
          <span class="muted small server">
            {config.store} · {config.embedding_model}
          </span>
        )}
      </header>
      <main id="main" tabIndex={-1}>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        {!hasToken ? (
          <TokenForm
            rejected={rejected}
            onToken={() => {
              setRejected(false);
              setHasToken(true);
            }}
          />
        ) : section === '#/kb' ? (
          <KnowledgeBasePage onChanged={() => void loadConfig()} />
        ) : section === '#/experiments' ? (
          experiment !== undefined ? (
            <ExperimentPage id={decodeURIComponent(experiment)} onServe={usePattern} />
          ) : (
            <ExperimentsPage />
          )
        ) : (
          <AskPage config={config} pattern={pattern} onUsePattern={usePattern} />
        )}
      </main>
    </>
  );
}

const root = document.getElementById('app');
if (root !== null) render(<App />, root);
