/** The Knowledge base page: collections, the served collection's documents and stats, upload and delete. */
import type { JSX } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, upload } from './api';
import { formatBytes } from './format';
import type { CollectionInfo, DocumentView, Stats } from './types';

interface UploadItem {
  name: string;
  state: 'uploading' | 'indexed' | 'failed' | 'pending';
  detail?: string;
}

export function KnowledgeBasePage(props: { onChanged: () => void }): JSX.Element {
  const [stats, setStats] = useState<Stats | undefined>();
  const [documents, setDocuments] = useState<DocumentView[]>([]);
  const [collections, setCollections] = useState<CollectionInfo[]>([]);
  const [uploads, setUploads] = useState<UploadItem[]>([]);
  const [error, setError] = useState<string | undefined>();
  const [dragging, setDragging] = useState(false);
  const [confirming, setConfirming] = useState<string | undefined>();
  const [prefix, setPrefix] = useState('');

  const refresh = useCallback(async () => {
    try {
      const [s, d, c] = await Promise.all([
        api<Stats>('GET', '/stats'),
        api<{ documents: DocumentView[] }>('GET', '/documents?limit=1000'),
        api<{ collections: CollectionInfo[] }>('GET', '/collections'),
      ]);
      setStats(s);
      setDocuments(d.documents);
      setCollections(c.collections);
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    }
  }, []);

  useEffect(() => {
    void refresh();
  }, [refresh]);

  // Ingestion progress: poll while uploads run or documents are pending.
  const busy =
    uploads.some((u) => u.state === 'uploading') || documents.some((d) => d.status === 'pending');
  useEffect(() => {
    if (!busy) return undefined;
    const timer = setInterval(() => void refresh(), 1000);
    return () => clearInterval(timer);
  }, [busy, refresh]);

  async function send(files: File[]) {
    const folder = prefix.trim().replace(/^\/+|\/+$/g, '');
    for (const file of files) {
      const key = folder === '' ? file.name : `${folder}/${file.name}`;
      setUploads((all) => [
        { name: key, state: 'uploading' },
        ...all.filter((u) => u.name !== key),
      ]);
      try {
        const r = await upload(file, key);
        setUploads((all) =>
          all.map((u) =>
            u.name === key
              ? {
                  name: key,
                  state:
                    r.status === 'failed'
                      ? 'failed'
                      : r.status === 'pending'
                        ? 'pending'
                        : 'indexed',
                  ...(r.error !== undefined && { detail: r.error }),
                  ...(r.chunks !== undefined && { detail: `${r.chunks} chunks` }),
                }
              : u,
          ),
        );
      } catch (e) {
        setUploads((all) =>
          all.map((u) =>
            u.name === key ? { name: key, state: 'failed', detail: (e as Error).message } : u,
          ),
        );
      }
      await refresh();
    }
    props.onChanged();
  }

  async function remove(key: string) {
    setConfirming(undefined);
    try {
      await api('DELETE', `/documents/${encodeURIComponent(key)}`);
      await refresh();
      props.onChanged();
    } catch (e) {
      setError((e as Error).message);
    }
  }

  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    setDragging(false);
    const files = [...(e.dataTransfer?.files ?? [])];
    if (files.length > 0) void send(files);
  };

  return (
    <div class="page kb">
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <section aria-labelledby="kb-stats">
        <h2 id="kb-stats">Collection {stats?.collection ?? ''}</h2>
        {stats && (
          <dl class="stats">
            <div>
              <dt>Documents</dt>
              <dd data-testid="stat-documents">{stats.documents}</dd>
            </div>
            <div>
              <dt>Chunks</dt>
              <dd data-testid="stat-chunks">{stats.chunks}</dd>
            </div>
            <div>
              <dt>Embedding</dt>
              <dd>
                {stats.embedding_model ?? '–'}
                {stats.dimension !== null && ` (${stats.dimension} d)`}
              </dd>
            </div>
            <div>
              <dt>Store</dt>
              <dd>{stats.store}</dd>
            </div>
            <div>
              <dt>Size on disk</dt>
              <dd data-testid="stat-size">{formatBytes(stats.size_bytes)}</dd>
            </div>
            <div>
              <dt>By status</dt>
              <dd>
                {Object.entries(stats.by_status)
                  .map(([k, v]) => `${k} ${v}`)
                  .join(', ') || '–'}
              </dd>
            </div>
          </dl>
        )}
      </section>

      <section aria-labelledby="kb-upload">
        <h2 id="kb-upload">Upload</h2>
        <label for="prefix">Folder in the knowledge base (optional)</label>
        <input
          id="prefix"
          type="text"
          value={prefix}
          placeholder="e.g. policies"
          onInput={(e) => setPrefix(e.currentTarget.value)}
        />
        <label
          for="files"
          class={`drop${dragging ? ' over' : ''}`}
          onDragOver={(e) => {
            e.preventDefault();
            setDragging(true);
          }}
          onDragLeave={() => setDragging(false)}
          onDrop={onDrop}
        >
          Drop files here, or choose files (txt, md, html, pdf, docx, JSON)
          <input
            id="files"
            type="file"
            multiple
            onChange={(e) => {
              const files = [...(e.currentTarget.files ?? [])];
              e.currentTarget.value = '';
              if (files.length > 0) void send(files);
            }}
          />
        </label>
        {uploads.length > 0 && (
          <ul class="uploads" aria-live="polite">
            {uploads.map((u) => (
              <li key={u.name} class={u.state}>
                <strong>{u.name}</strong>:{' '}
                {u.state === 'uploading' ? 'uploading and indexing…' : u.state}
                {u.detail && ` (${u.detail})`}
              </li>
            ))}
          </ul>
        )}
      </section>

      <section aria-labelledby="kb-docs">
        <h2 id="kb-docs">Documents</h2>
        {documents.length === 0 ? (
          <p class="muted">No documents yet.</p>
        ) : (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Document</th>
                  <th scope="col">Status</th>
                  <th scope="col">Chunks</th>
                  <th scope="col">Updated</th>
                  <th scope="col">
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {documents.map((d) => (
                  <tr key={d.document_key}>
                    <td class="mono">{d.document_key}</td>
                    <td>
                      <span class={`badge ${d.status}`}>{d.status}</span>
                      {d.error && <span class="error small"> {d.error}</span>}
                    </td>
                    <td>{d.chunk_count}</td>
                    <td>{d.updated_at?.replace('T', ' ').slice(0, 19) ?? '–'}</td>
                    <td>
                      {confirming === d.document_key ? (
                        <>
                          <button
                            type="button"
                            class="danger"
                            onClick={() => void remove(d.document_key)}
                          >
                            Confirm delete
                          </button>{' '}
                          <button
                            type="button"
                            class="secondary"
                            onClick={() => setConfirming(undefined)}
                          >
                            Cancel
                          </button>
                        </>
                      ) : (
                        <button
                          type="button"
                          class="secondary"
                          aria-label={`Delete ${d.document_key}`}
                          onClick={() => setConfirming(d.document_key)}
                        >
                          Delete
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      <section aria-labelledby="kb-collections">
        <h2 id="kb-collections">Collections</h2>
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Kind</th>
                <th scope="col">Chunks</th>
                <th scope="col">Embedding</th>
                <th scope="col">Experiments</th>
              </tr>
            </thead>
            <tbody>
              {collections.map((c) => (
                <tr key={c.name}>
                  <td class="mono">
                    {c.name}
                    {c.name === stats?.collection && <span class="badge indexed"> served</span>}
                  </td>
                  <td>{c.kind === 'knowledge_base' ? 'knowledge base' : 'experiment index'}</td>
                  <td>{c.chunks ?? (c.name === stats?.collection ? stats.chunks : '–')}</td>
                  <td>{c.embedding_model ?? '–'}</td>
                  <td>
                    {c.experiments.map((id, i) => (
                      <span key={id}>
                        {i > 0 && ', '}
                        <a href={`#/experiments/${encodeURIComponent(id)}`}>{id}</a>
                      </span>
                    ))}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
    </div>
  );
}
