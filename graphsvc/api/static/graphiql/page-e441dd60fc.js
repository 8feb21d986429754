"use strict";(()=>{var h="graphsvc.apiKey",y="";function p(){try{return window.sessionStorage.getItem(h)??""}catch{return y}}function g(e){let t=e.trim();y=t;try{t?window.sessionStorage.setItem(h,t):window.sessionStorage.removeItem(h)}catch{}}function k(e){return e?{Authorization:`Bearer ${e}`}:{}}var S=`# graphsvc. Ctrl-Enter runs the query.
# With API keys on the server: put yours
# in the field above, or send an
# Authorization header (Headers, below).
# GraphiQL's Explorer (folder icon, left)
# builds a query as you tick fields.

query Overview {
  viewer {
    namespace
    role
  }
  stats {
    memories
    links
    beliefs
  }
}

# query Bundle {
#   bundle(query: "why did checkout time out?",
#          budgetTokens: 300) {
#     topScore skipped evidenceCoverage
#     uncoveredTerms
#     capsules { text score tokens reason }
#   }
# }
`,i="unknown",m=0,f=new Set;function E(e){e!==i&&(i=e,f.forEach(t=>t()))}function v(e){return f.add(e),()=>f.delete(e)}var b="This server requires a key: paste one in the key field.",R="The server refused this key: check it, or paste another in the key field.";function w(e,t){return t==="missing"?b:t==="refused"?R:e?"Key in use for this tab.":"No key: requests go without one."}function G(e){return{...e,content:()=>{let n=React.useSyncExternalStore(v,()=>i);if(n==="missing"||n==="refused"){let r=n==="missing"?b:R;return React.createElement("div",{className:"gs-no-schema",role:"status"},`No schema yet. ${r} The Explorer lists the schema once the server accepts a key.`)}return React.createElement(e.content)}}}function x(e,t){let n=m;return async(r,a)=>{let u={"Content-Type":"application/json",Accept:"application/graphql-response+json, application/json",...k(t)};for(let[d,s]of Object.entries(a?.headers??{}))typeof s=="string"&&(u[d]=s);let o=await fetch(e,{method:"POST",headers:u,body:JSON.stringify(r),credentials:"same-origin"});n===m&&(o.status===401?E(t?"refused":"missing"):o.ok&&E("accepted"));let l=await o.text();try{return JSON.parse(l)}catch{return{errors:[{message:`HTTP ${o.status}: ${l.slice(0,500)}`}]}}}}function T(){let e=document.getElementById("graphiql"),t=document.getElementById("gs-key-form"),n=document.getElementById("gs-api-key"),r=document.getElementById("gs-key-clear"),a=document.getElementById("gs-key-status");if(!e||!t||!n||!r||!a)return;let u=window.location.pathname,o=G(GraphiQLPluginExplorer.explorerPlugin()),l=ReactDOM.createRoot(e),d="";v(()=>{a.textContent=w(d,i)});let s=c=>{d=c,m+=1,i="unknown",l.render(React.createElement(GraphiQL,{fetcher:x(u,c),plugins:[o],defaultQuery:S,isHeadersEditorEnabled:!0,shouldPersistHeaders:!1,defaultEditorToolsVisibility:!0,inputValueDeprecation:!0})),a.textContent=w(c,i)};n.value=p(),t.addEventListener("submit",c=>{c.preventDefault(),g(n.value),s(p())}),r.addEventListener("click",()=>{n.value="",g(""),s(""),n.focus()}),s(p())}T();})();
