"use strict";(()=>{var d="graphsvc.apiKey",g="";function l(){try{return window.sessionStorage.getItem(d)??""}catch{return g}}function p(e){let t=e.trim();g=t;try{t?window.sessionStorage.setItem(d,t):window.sessionStorage.removeItem(d)}catch{}}function m(e){return e?{Authorization:`Bearer ${e}`}:{}}var h=`# graphsvc. Ctrl-Enter runs the query.
# With API keys on the server: put yours
# in the field above, or send an
# Authorization header (Headers, below).
# The Explorer (folder icon, left) builds
# a query as you tick fields.

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
`;function f(e,t){return async(n,s)=>{let o={"Content-Type":"application/json",Accept:"application/graphql-response+json, application/json",...m(t)};for(let[u,r]of Object.entries(s?.headers??{}))typeof r=="string"&&(o[u]=r);let i=await fetch(e,{method:"POST",headers:o,body:JSON.stringify(n),credentials:"same-origin"}),a=await i.text();try{return JSON.parse(a)}catch{return{errors:[{message:`HTTP ${i.status}: ${a.slice(0,500)}`}]}}}}function y(){let e=document.getElementById("graphiql"),t=document.getElementById("gs-key-form"),n=document.getElementById("gs-api-key"),s=document.getElementById("gs-key-clear"),o=document.getElementById("gs-key-status");if(!e||!t||!n||!s||!o)return;let i=window.location.pathname,a=GraphiQLPluginExplorer.explorerPlugin(),u=ReactDOM.createRoot(e),r=c=>{u.render(React.createElement(GraphiQL,{fetcher:f(i,c),plugins:[a],defaultQuery:h,isHeadersEditorEnabled:!0,shouldPersistHeaders:!1,defaultEditorToolsVisibility:!0,inputValueDeprecation:!0})),o.textContent=c?"Key in use for this tab.":"No key: requests go without one."};n.value=l(),t.addEventListener("submit",c=>{c.preventDefault(),p(n.value),r(l())}),s.addEventListener("click",()=>{n.value="",p(""),r(""),n.focus()}),r(l())}y();})();
