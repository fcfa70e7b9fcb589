// The results site's script (proposal_nb.site.build copies it into every built site): embeds every chart spec with
// vega-embed, fills the per-prompt panel from the selection signal 'prompt' (proposal_nb.site.charts.PROMPT_SIGNAL)
// and sets window.__siteReady when every chart has rendered (the browser check waits for it).
(function(){
  window.__views = {}; window.__siteErrors = [];
  function promptId(v){ if(!v) return null; if(Array.isArray(v.prompt_id)) return v.prompt_id[0];
    if(v.prompt_id!==undefined) return v.prompt_id; if(v.values&&v.values.length) return v.values[0]; return null; }
  function esc(s){ return String(s).replace(/[&<>"]/g, c=>({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c])); }
  function showPrompt(id){
    const panel=document.getElementById('prompt-panel'), data=window.__prompts||{}; if(!panel) return;
    const d=data[id]; if(!d){ panel.innerHTML='<p class="note">Click a point to see its prompt.</p>'; panel.dataset.prompt=''; return; }
    const keys=Object.keys(d).filter(k=>k!=='rows'&&k!=='prompt');
    let h='<h3>Prompt <code>'+esc(id)+'</code></h3><p>'+keys.map(k=>'<b>'+esc(k)+'</b> = '+esc(d[k])).join(' &nbsp; ')+'</p>';
    h+='<pre>'+esc(d.prompt)+'</pre>';
    if(d.rows.length){ const cols=Object.keys(d.rows[0]);
      h+='<table class="tbl"><tr>'+cols.map(c=>'<th>'+esc(c)+'</th>').join('')+'</tr>'+
        d.rows.map(r=>'<tr>'+cols.map(c=>'<td>'+esc(r[c])+'</td>').join('')+'</tr>').join('')+'</table>'; }
    panel.innerHTML=h; panel.dataset.prompt=id;
  }
  const pj=document.getElementById('prompt-data'); if(pj) window.__prompts=JSON.parse(pj.textContent);
  const jobs=[];
  document.querySelectorAll('script[type="application/json"][data-chart]').forEach(function(s){
    const id=s.dataset.chart, spec=JSON.parse(s.textContent);
    jobs.push(vegaEmbed('#'+id, spec, {renderer:'svg', actions:false}).then(function(res){
      window.__views[id]=res.view;
      try { res.view.addSignalListener('prompt', function(n, v){ showPrompt(promptId(v)); }); } catch(e) {}
    }));
  });
  // the run pages' completion samples: the search box shows the draws whose id holds what is typed
  document.querySelectorAll('.completions').forEach(function(box){
    const input=box.querySelector('input.draw-find'), count=box.querySelector('.draw-find-count'); if(!input) return;
    const cards=Array.from(box.querySelectorAll('.draw')), heads=Array.from(box.querySelectorAll('h3'));
    input.addEventListener('input', function(){
      const q=input.value.trim().toLowerCase(); let n=0;
      cards.forEach(function(c){ const hit=!q||c.dataset.id.toLowerCase().includes(q); c.style.display=hit?'':'none'; n+=hit; });
      heads.forEach(function(h){ let e=h.nextElementSibling, any=false;
        while(e&&e.tagName!=='H3'){ if(e.classList.contains('draw')&&e.style.display!=='none') any=true; e=e.nextElementSibling; }
        h.style.display=any?'':'none'; });
      count.textContent=q?(n?n+' of '+cards.length+' shown draws':'not among the shown draws: find_draw (above) reads any draw'):'';
      box.dataset.shown=String(n);
    });
  });
  Promise.all(jobs).then(function(){ window.__siteReady=true; }, function(e){ console.error('chart failed: '+e); window.__siteReady='error'; });
})();
